#pragma once
#include "api/adapter.h"
namespace mw {
AdapterSpec lmdb_adapter_spec();
}
