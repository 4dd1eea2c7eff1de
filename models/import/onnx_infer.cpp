#include "models/import/onnx_infer.hpp"

#include <onnx/shape_inference/implementation.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <exception>

namespace ipusim::models {
namespace {

// What inference sends back at most: shapes, far smaller than any model they describe.
constexpr std::size_t kMaxReplyBytes = std::size_t{256} << 20;
constexpr unsigned kMaxSeconds = 60;

void write_all(int fd, const std::string& bytes) {
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    done += std::size_t(n);
  }
}

// The child: infers, then sends 'S' and the inferred part of the graph, or 'E' and the error.
[[noreturn]] void infer_and_reply(onnx::ModelProto& model, int fd) {
  ::alarm(kMaxSeconds);
  std::string reply;
  try {
    onnx::shape_inference::InferShapes(model);
    onnx::GraphProto inferred;
    *inferred.mutable_value_info() = model.graph().value_info();
    *inferred.mutable_output() = model.graph().output();
    reply = "S" + inferred.SerializeAsString();
  } catch (const std::exception& e) {
    reply = std::string("E") + e.what();
  }
  write_all(fd, reply);
  ::_exit(0);  // no destructors or exit handlers of the parent's state
}

// Everything the child sends, up to kMaxReplyBytes (then "" : the reply is refused).
std::string read_reply(int fd) {
  std::string reply;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return reply;
    reply.append(buffer, std::size_t(n));
    if (reply.size() > kMaxReplyBytes)
      return "";
  }
}

}  // namespace

std::string infer_shapes_isolated(onnx::ModelProto& model) {
  int fds[2];
  if (::pipe(fds) != 0)
    return "no pipe to run ONNX shape inference through";
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return "no process to run ONNX shape inference in";
  }
  if (child == 0) {
    ::close(fds[0]);
    infer_and_reply(model, fds[1]);
  }
  ::close(fds[1]);
  const std::string reply = read_reply(fds[0]);
  ::close(fds[0]);
  if (reply.empty())
    ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty())
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM
               ? "it ran for more than a minute"
               : "it failed on this graph (libonnx stopped reading it: a malformed file)";
  if (reply[0] == 'E')
    return reply.substr(1);
  onnx::GraphProto inferred;
  if (reply[0] != 'S' || !inferred.ParseFromString(reply.substr(1)))
    return "its result could not be read";
  *model.mutable_graph()->mutable_value_info() = inferred.value_info();
  *model.mutable_graph()->mutable_output() = inferred.output();
  return "";
}

}  // namespace ipusim::models
