// The options http and couchdb both take, declared once for either adapter's typed options
// struct O (options.h), which has the members named here.
#pragma once
#include "adapters/http/client.h"
#include "api/options.h"

namespace mw::http {

template <class O>
OptionSpec max_body_option() {
  return opt(&O::max_body, {.name = "max-body",
                            .help = "a longer response body is a failure (the transfer is cut there)",
                            .min = 1,
                            .max = 4294967296.0});
}

template <class O>
OptionSpec engine_option() {
  return opt(&O::engine, {.name = "engine",
                          .help = "native (own sockets, http-parser), curl (libcurl), auto: native unless https "
                                  "or a proxy",
                          .choices = {"auto", "native", "curl"}});
}

template <class O>
OptionSpec credentials_option() {
  return opt(&O::credentials_env, {.name = "credentials-env", .help = "environment variable holding user:password"});
}

}  // namespace mw::http
