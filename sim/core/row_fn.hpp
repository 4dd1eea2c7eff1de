#pragma once
// A function a registry row must name (a layer type's LayerTypeDef, a schedule's ScheduleRow): a
// row that leaves one out, or gives nullptr, does not compile, whatever the compiler's warnings
// (clang does not warn of a designated initializer that leaves a member out).

#include <cstddef>
#include <utility>

namespace ipusim::core {

// False, but only once instantiated, so that the assertion below fires only when a row uses it.
template <class>
inline constexpr bool kRowFnLeftOut = false;

template <class Fn>
class RowFn {
 public:
  constexpr RowFn(Fn* fn) : fn_(fn) {}  // implicit, so that a row names the function plainly
  RowFn(std::nullptr_t) = delete;
  // What a member left out of a row's braces is made with: the build stops here.
  template <class LeftOut = Fn>
  RowFn() : fn_(nullptr) {
    static_assert(kRowFnLeftOut<LeftOut>,
                  "a registry row names every function: its row type has no default for one");
  }

  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    return fn_(std::forward<Args>(args)...);
  }

 private:
  Fn* fn_;
};

}  // namespace ipusim::core
