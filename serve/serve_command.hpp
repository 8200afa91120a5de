// `hazefree serve CONFIG.toml [--listen ADDR:PORT]` (SPEC 12): many cameras in one process, over
// the public API (include/hazefree/hazefree.hpp), with metrics, a JSON API and a page.
#pragma once

namespace hazefree::serve {

// argv[0] is "serve"; returns the exit status (0, 1 port in use, 2 bad configuration, 130
// stopped by SIGINT/SIGTERM).
int serve_main(int argc, char** argv);

}  // namespace hazefree::serve
