// Invariant: no backslash survives normalize_path.
#include "gen.hpp"
#include "normalize_path.hpp"

int main() {
    std::mt19937 rng(frozen_seed());
    for (int i = 0; i < 6; ++i) {
        const std::string out = normalize_path(random_path(rng));
        assert(out.find('\\') == std::string::npos);
    }
    return 0;
}
