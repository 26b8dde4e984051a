// Invariant: normalising twice is normalising once.
#include "gen.hpp"
#include "normalize_path.hpp"

int main() {
    std::mt19937 rng(frozen_seed());
    for (int i = 0; i < 6; ++i) {
        const std::string once = normalize_path(random_path(rng));
        assert(normalize_path(once) == once);
    }
    return 0;
}
