#pragma once
#include "adapter.h"
namespace mw {
AdapterSpec rocksdb_adapter_spec();
}
