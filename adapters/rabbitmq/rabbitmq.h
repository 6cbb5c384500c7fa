// RabbitMQ as a queue (AMQP 0-9-1 through rabbitmq-c): produce, consume and roundtrip of
// src/queue/queue.h on durable classic or quorum queues, publisher confirms, manual consumer acks.
#pragma once
#include "api/adapter.h"

namespace mw {
AdapterSpec rabbitmq_adapter_spec();
}
