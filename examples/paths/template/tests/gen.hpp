// The generator the property tests share: random paths from a seed. The seed comes from
// PATCHWARDEN_SEED (the scorer sets it, one run per seed); run by hand, the frozen default.
#pragma once

#undef NDEBUG  // the assertions are the oracle: a build type must not compile them out
#include <cassert>
#include <cstdlib>
#include <random>
#include <string>

inline unsigned frozen_seed() {
    const char* text = std::getenv("PATCHWARDEN_SEED");
    return text != nullptr ? static_cast<unsigned>(std::strtoul(text, nullptr, 10)) : 11u;
}

// A path of 1..8 parts joined by '/', '\\' or runs of them.
inline std::string random_path(std::mt19937& rng) {
    static const char* const parts[] = {"usr", "lib", "a", "b.txt", "..", ".", "x y"};
    static const char* const seps[] = {"/", "\\", "//", "\\\\", "/\\"};
    std::string out = rng() % 3 == 0 ? "/" : "";
    int count = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < count; ++i) {
        if (i > 0) out += seps[rng() % 5];
        out += parts[rng() % 7];
    }
    if (rng() % 4 == 0) out += seps[rng() % 5];
    return out;
}

// Every '\\' of path written '/' instead (or the other way round).
inline std::string swap_separators(std::string path, char from, char to) {
    for (char& ch : path) {
        if (ch == from) ch = to;
    }
    return path;
}
