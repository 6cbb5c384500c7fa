#pragma once
#include "adapter.h"
namespace mw {
AdapterSpec memcached_adapter_spec();
}
