#include "dshpty/owner.hpp"

namespace dshpty {

const std::string& Owner::label() const noexcept {
  static const std::string none;
  return id_ ? id_->label : none;
}

}  // namespace dshpty
