#pragma once
// What kind of file a mode names, as errors say it: "it is a FIFO (named pipe), not ...".

#include <sys/stat.h>

#include <string>

namespace ipusim::core {

inline std::string file_kind(mode_t mode) {
  if (S_ISREG(mode))
    return "a regular file";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO (named pipe)";
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

}  // namespace ipusim::core
