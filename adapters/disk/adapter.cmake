# io_uring for the queue depths of -P; the disk adapter is built only with it.
mw_adapter(disk ORDER 110 SPEC disk_adapter_spec HEADER disk.h
  PACKAGES liburing-dev
  MODULES liburing)
