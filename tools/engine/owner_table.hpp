// Owners by label, as the faces name them: the first use of a label mints its owner, and
// once a label's owner is taken away (to be disposed) the next use mints a new identity,
// even while the old one is still being torn down.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "dshpty/owner.hpp"
#include "dshpty/service.hpp"

namespace dshpty::engine {

class OwnerTable {
 public:
  explicit OwnerTable(Service& service) : service_(service) {}

  // The label's current owner, minted on first use.
  Owner get(std::string_view label);
  // Forgets the label and returns its owner; nullopt when the label names no owner yet.
  std::optional<Owner> take(std::string_view label);

 private:
  Service& service_;
  std::map<std::string, Owner, std::less<>> owners_;
};

}  // namespace dshpty::engine
