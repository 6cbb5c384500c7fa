// A client library's calls into libc, seen by mwbench first. Some libraries read from their
// sockets where mwbench cannot look (libnats on threads of its own, libmosquitto inside its loop)
// and trust what they read: a length a server declares is allocated and filled. Pointing the
// library's import of recv or read (its GOT entry) at a function of the adapter's lets the adapter
// check each frame's header before the library acts on it. Nothing else changes: the adapter's
// function calls the one the library called before, and every other library keeps its own.
#pragma once
#include <string>

namespace mw::conn {

// Points every import of `symbol` by the loaded library whose file name starts with `soname`
// ("libnats.so") at `hook`, once `*real` holds the function those calls reached before (the one
// `hook` calls on): a call that reaches `hook` finds it set. false, with `why` set, when the
// library is not loaded, does not import `symbol`, or its imports cannot be changed here.
// Thread-safe; calling it again is harmless.
bool hook_import(const std::string& soname, const char* symbol, void* hook, void** real, std::string& why);

}  // namespace mw::conn
