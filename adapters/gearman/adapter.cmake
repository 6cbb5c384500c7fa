mw_optional_adapter(gearman libgearman-dev gearmand)
