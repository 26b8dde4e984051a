// Invariant: a path written with '\\' and the same path written with '/' normalise alike.
#include "gen.hpp"
#include "normalize_path.hpp"

int main() {
    std::mt19937 rng(frozen_seed());
    for (int i = 0; i < 6; ++i) {
        const std::string path = random_path(rng);
        assert(normalize_path(swap_separators(path, '/', '\\')) ==
               normalize_path(swap_separators(path, '\\', '/')));
    }
    return 0;
}
