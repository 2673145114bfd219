#include "owner_table.hpp"

namespace dshpty::engine {

Owner OwnerTable::get(std::string_view label) {
  auto it = owners_.find(label);
  if (it == owners_.end()) it = owners_.emplace(std::string(label), service_.mint_owner(std::string(label))).first;
  return it->second;
}

std::optional<Owner> OwnerTable::take(std::string_view label) {
  const auto it = owners_.find(label);
  if (it == owners_.end()) return std::nullopt;
  Owner owner = it->second;
  owners_.erase(it);
  return owner;
}

}  // namespace dshpty::engine
