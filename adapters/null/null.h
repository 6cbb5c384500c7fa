#pragma once
#include "adapter.h"
namespace mw {
AdapterSpec null_adapter_spec();
}
