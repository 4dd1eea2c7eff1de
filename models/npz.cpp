#include "models/npz.hpp"

#include <zip.h>

#include <memory>

#include "models/data.hpp"
#include "models/npy.hpp"
#include "sim/core/error.hpp"

namespace ipusim::models {
namespace {

struct ArchiveCloser {
  void operator()(zip_t* archive) const { zip_discard(archive); }
};
using Archive = std::unique_ptr<zip_t, ArchiveCloser>;

struct MemberCloser {
  void operator()(zip_file_t* file) const { zip_fclose(file); }
};
using Member = std::unique_ptr<zip_file_t, MemberCloser>;

Archive open_archive(const std::string& path) {
  int code = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (archive == nullptr) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    const std::string why = zip_error_strerror(&error);
    zip_error_fini(&error);
    throw core::ConfigError(path, "", "not an .npz archive of numpy arrays: " + why);
  }
  return Archive(archive);
}

std::vector<char> member_bytes(zip_t* archive, zip_uint64_t index, const zip_stat_t& stat,
                               const std::string& path) {
  Member file(zip_fopen_index(archive, index, 0));
  std::vector<char> bytes(stat.size);
  if (!file || zip_fread(file.get(), bytes.data(), stat.size) != zip_int64_t(stat.size))
    throw core::ConfigError(
        path, "", std::string("cannot read member '") + stat.name + "': " + zip_strerror(archive));
  return bytes;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> read_npz(const std::string& path,
                                                     std::int64_t max_bytes) {
  const Archive archive = open_archive(path);
  const zip_int64_t count = zip_get_num_entries(archive.get(), 0);
  std::vector<std::pair<std::string, Tensor>> arrays;
  std::int64_t total = 0;
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat_index(archive.get(), zip_uint64_t(i), 0, &stat) != 0 ||
        !(stat.valid & ZIP_STAT_NAME) || !(stat.valid & ZIP_STAT_SIZE))
      throw core::ConfigError(path, "", "member " + std::to_string(i) + " has no name or size");
    std::string name = stat.name;
    if (name.size() < 4 || name.substr(name.size() - 4) != ".npy")
      throw core::ConfigError(path, "", "member '" + name + "' is not an .npy array");
    total += std::int64_t(stat.size);
    if (total > max_bytes)
      throw core::ConfigError(path, "",
                              "holds more than " + std::to_string(max_bytes >> 20) +
                                  " MB of arrays, more than ipusim's models hold");
    try {
      const auto bytes = member_bytes(archive.get(), zip_uint64_t(i), stat, path);
      arrays.emplace_back(name.substr(0, name.size() - 4), parse_npy_f32(bytes, name));
    } catch (const DataError& error) {
      throw core::ConfigError(path, "", "member '" + name + "': " + error.problem());
    }
  }
  return arrays;
}

}  // namespace ipusim::models
