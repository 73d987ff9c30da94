// Where the committed fixtures are: the one test file that knows the source tree's path, given as
// a definition on this file alone (CMakeLists.txt).
#include "support.h"

namespace test {
const char* const kFixturesDir = FIXTURES_DIR;
}  // namespace test
