// The engine's count of owed callbacks (Engine::counted, Engine::owed), for its files.
#pragma once

#include "engine.hpp"

namespace dshpty::engine {

template <class T>
Callback<T> Engine::counted(Callback<T> done) {
  return [this, done = std::move(done)](Result<T> result) {
    done(std::move(result));
    --pending_;
    settle_if_quiet();
  };
}

template <class T>
Callback<T> Engine::owed(Callback<T> done) {
  ++pending_;
  return counted(std::move(done));
}

}  // namespace dshpty::engine
