// The service's page (serve/page.html, built into the program).
#pragma once

#include <string>

namespace hazefree::serve {

const std::string& page_html();

}  // namespace hazefree::serve
