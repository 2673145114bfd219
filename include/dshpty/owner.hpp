// Owners: the identity an operation acts for. Minted by a Service from a label; identity is
// exact (two owners minted from the same label are different owners).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace dshpty {

namespace detail {
struct OwnerIdentity {
  std::string label;
  std::uint64_t serial;      // unique within the minting service
  std::uint64_t service;     // the minting service's instance serial (never reused)
};
}  // namespace detail

// A handle to an owner identity. Copies are the same owner. A default-constructed Owner is
// no owner: every service operation treats it as not live.
class Owner {
 public:
  Owner() = default;  // no owner

  // False for a default-constructed Owner. Says nothing about liveness: ask the service.
  bool valid() const noexcept { return static_cast<bool>(id_); }
  // The label it was minted from ("" for no owner). Display only, never authority.
  const std::string& label() const noexcept;
  // The service-unique serial (0 for no owner). Display only.
  std::uint64_t serial() const noexcept { return id_ ? id_->serial : 0; }

  // Identity, not label: true only for copies of the same minted owner.
  friend bool operator==(const Owner& a, const Owner& b) noexcept { return a.id_ == b.id_; }

 private:
  friend class Service;
  friend struct OwnerAccess;
  explicit Owner(std::shared_ptr<const detail::OwnerIdentity> id) noexcept : id_(std::move(id)) {}
  std::shared_ptr<const detail::OwnerIdentity> id_;
};

}  // namespace dshpty
