# The echo adapter: a loopback round trip to a server of its own, no library.
mw_adapter(echo ORDER 120 SPEC echo_adapter_spec HEADER echo.h)
