#pragma once
#include "adapter.h"
namespace mw {
AdapterSpec tokyocabinet_adapter_spec();
}
