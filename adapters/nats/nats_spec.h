// (Not nats.h: <nats/nats.h> is the C client's header, and adapters/ is on the include path.)
// NATS as a queue (the NATS C client, nats.c): core publish/subscribe (roundtrip), and JetStream
// (--jetstream) with acknowledged asynchronous publishes and a durable pull consumer.
#pragma once
#include "api/adapter.h"

namespace mw {
AdapterSpec nats_adapter_spec();
}
