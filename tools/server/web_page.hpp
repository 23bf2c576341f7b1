// The web chat page served at "/": tools/server/web/index.html, embedded when the server is built.
#pragma once

namespace tessel::server {

/// The page's HTML (UTF-8, NUL-terminated).
extern const char* const kWebPage;

}  // namespace tessel::server
