#pragma once
#include "api/adapter.h"
namespace mw {
AdapterSpec tokyocabinet_adapter_spec();
}
