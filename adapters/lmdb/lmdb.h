#pragma once
#include "adapter.h"
namespace mw {
AdapterSpec lmdb_adapter_spec();
}
