mw_adapter(tokyocabinet ORDER 80 SPEC tokyocabinet_adapter_spec HEADER tokyocabinet.h
  PACKAGES libtokyocabinet-dev
  MODULES tokyocabinet)
