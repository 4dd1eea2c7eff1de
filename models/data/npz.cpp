#include "models/data/npz.hpp"

#include <zip.h>

#include <algorithm>
#include <memory>

#include "models/data/data.hpp"
#include "models/data/npy.hpp"
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

// numpy's headers are a few hundred bytes; a longer one is no array numpy wrote.
constexpr std::size_t kMaxHeaderBytes = std::size_t{1} << 20;

void read_exactly(zip_t* archive, zip_file_t* file, void* into, std::size_t bytes,
                  const std::string& name, const std::string& path) {
  if (zip_fread(file, into, bytes) != zip_int64_t(bytes))
    throw core::ConfigError(path, "",
                            "cannot read member '" + name + "': " + zip_strerror(archive));
}

// One member's array. Its header is read first, and only the data it declares is read after
// it, once the member's size and the bytes left under `budget` are known to hold it: a
// compressed member that inflates past either is never inflated.
Tensor member_array(zip_t* archive, zip_uint64_t index, const zip_stat_t& stat,
                    const std::string& path, std::int64_t max_bytes, std::int64_t& budget) {
  const std::string name = stat.name;
  Member file(zip_fopen_index(archive, index, 0));
  if (!file)
    throw core::ConfigError(path, "",
                            "cannot read member '" + name + "': " + zip_strerror(archive));
  std::vector<char> header(std::min<zip_uint64_t>(stat.size, 12));
  read_exactly(archive, file.get(), header.data(), header.size(), name, path);
  const std::size_t header_bytes = npy_header_bytes(header, name);
  if (header_bytes < header.size() || header_bytes > kMaxHeaderBytes || header_bytes > stat.size)
    throw DataError(name, "a header of " + std::to_string(header_bytes) + " bytes in a member of " +
                              std::to_string(stat.size) + " (expected 12 up to 1 MB)");
  header.resize(header_bytes);
  read_exactly(archive, file.get(), header.data() + 12, header_bytes - 12, name, path);
  const NpyHeader array = parse_npy_f32_header(header, name);
  if (stat.size - header_bytes < array.data_bytes)
    throw DataError(name, "expected " + std::to_string(array.data_bytes) +
                              " bytes of array data for shape " + shape_text(array.shape) +
                              ", found " + std::to_string(stat.size - header_bytes));
  if (std::int64_t(array.data_bytes) > budget)
    throw core::ConfigError(path, "",
                            "member '" + name + "' declares shape " + shape_text(array.shape) +
                                " (" + std::to_string(array.data_bytes) + " bytes), past the " +
                                std::to_string(budget) + " bytes left of the " +
                                std::to_string(max_bytes) +
                                " the model's weights and their optimizer state can take");
  budget -= std::int64_t(array.data_bytes);
  Tensor tensor(array.shape);
  read_exactly(archive, file.get(), tensor.data(), array.data_bytes, name, path);
  return tensor;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> read_npz(const std::string& path,
                                                     std::int64_t max_bytes) {
  const Archive archive = open_archive(path);
  const zip_int64_t count = zip_get_num_entries(archive.get(), 0);
  std::vector<std::pair<std::string, Tensor>> arrays;
  std::int64_t budget = max_bytes;
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat_index(archive.get(), zip_uint64_t(i), 0, &stat) != 0 ||
        !(stat.valid & ZIP_STAT_NAME) || !(stat.valid & ZIP_STAT_SIZE))
      throw core::ConfigError(path, "", "member " + std::to_string(i) + " has no name or size");
    std::string name = stat.name;
    if (name.size() < 4 || name.substr(name.size() - 4) != ".npy")
      throw core::ConfigError(path, "", "member '" + name + "' is not an .npy array");
    try {
      arrays.emplace_back(
          name.substr(0, name.size() - 4),
          member_array(archive.get(), zip_uint64_t(i), stat, path, max_bytes, budget));
    } catch (const DataError& error) {
      throw core::ConfigError(path, "", "member '" + name + "': " + error.problem());
    }
  }
  return arrays;
}

}  // namespace ipusim::models
