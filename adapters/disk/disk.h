#pragma once
#include "adapter.h"
namespace mw {
AdapterSpec disk_adapter_spec();
}
