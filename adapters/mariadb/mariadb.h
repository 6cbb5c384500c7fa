#pragma once
#include "api/adapter.h"

namespace mw {
AdapterSpec mariadb_adapter_spec();
}  // namespace mw
