#pragma once
#include "api/adapter.h"
namespace mw {
AdapterSpec rocksdb_adapter_spec();
}
