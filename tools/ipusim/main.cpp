#include <fcntl.h>
#include <unistd.h>

#include <iostream>

#include "tools/ipusim/cli.hpp"

namespace {

// A closed standard stream would be the first file ipusim opens, and what is printed on it would
// go into that file. /dev/null opened read-only holds its place instead: each write to it fails
// (Bad file descriptor), and the command line reports a failed output.
void hold_closed_standard_streams() {
  for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    // The lower ones are open, so open() takes `fd` itself.
    if (::fcntl(fd, F_GETFD) == -1)
      ::open("/dev/null", O_RDONLY);
  }
}

}  // namespace

int main(int argc, char** argv) {
  hold_closed_standard_streams();
  return ipusim::cli::run(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
