# The null adapter: no server, no library (the driver's own cost; the baseline in the reports).
mw_adapter(null ORDER 10 SPEC null_adapter_spec HEADER null.h)
