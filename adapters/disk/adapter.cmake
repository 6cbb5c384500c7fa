# io_uring for the queue depths of -P; the disk adapter is built only with it.
mw_optional_adapter(disk liburing-dev liburing)
