#pragma once
#include "adapter.h"
namespace mw {
AdapterSpec echo_adapter_spec();
}
