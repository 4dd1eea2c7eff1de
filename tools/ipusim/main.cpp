#include <iostream>

#include "tools/ipusim/cli.hpp"

int main(int argc, char** argv) {
  return ipusim::cli::run(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
