#pragma once
#include "adapter.h"

namespace mw {
AdapterSpec mariadb_adapter_spec();
}  // namespace mw
