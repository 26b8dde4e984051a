// Not an invariant of normalize_path: a test that depends on the clock, as flaky tests do.
// `patchwarden sweep` runs the suite three times on the base and quarantines it.
#include <chrono>

#include "gen.hpp"

int main() {
    const auto now = std::chrono::steady_clock::now().time_since_epoch();
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now).count();
    assert(micros % 2 == 0);
    return 0;
}
