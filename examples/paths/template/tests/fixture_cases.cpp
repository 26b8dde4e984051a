// The pinned cases (tests/fixtures/cases.txt, hash-pinned in tests/fixtures/manifest.json):
// "input<TAB>expected" per line.
#include <fstream>
#include <string>

#include "gen.hpp"
#include "normalize_path.hpp"

int main() {
    std::ifstream cases("fixtures/cases.txt");
    assert(cases.good());
    std::string line;
    int seen = 0;
    while (std::getline(cases, line)) {
        const auto tab = line.find('\t');
        assert(tab != std::string::npos);
        assert(normalize_path(line.substr(0, tab)) == line.substr(tab + 1));
        ++seen;
    }
    assert(seen > 0);
    return 0;
}
