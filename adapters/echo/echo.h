#pragma once
#include "api/adapter.h"
namespace mw {
AdapterSpec echo_adapter_spec();
}
