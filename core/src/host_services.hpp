// The sy_host table handed to plugins: logging and option lookup.
//
// The C callbacks in sy_host carry no context pointer, so the table itself is one static
// object shared by every Runtime. A callback finds "its" HostServices (the options of the
// Runtime that loaded the plugin) through a thread-local HostCallScope that the core opens
// around every call into a plugin; a callback from a thread of the plugin's own (outside any
// scope) uses the most recently created Runtime's services.
#ifndef SWITCHYARD_CORE_HOST_SERVICES_HPP
#define SWITCHYARD_CORE_HOST_SERVICES_HPP

#include <switchyard/switchyard.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace switchyard::detail {

class HostServices {
 public:
  // `options` maps "<plugin>.<key>" (or "*.<key>", for every plugin) to a value.
  explicit HostServices(std::map<std::string, std::string> options);
  static std::shared_ptr<const HostServices> from_settings(const Settings& settings);

  // The table plugins receive. Static storage: valid for the life of the process, so it
  // outlives every plugin library, as abi.h requires.
  static const sy_host* table();

  // The value of `plugin`.`key`, else of *.`key`, else nullptr. The pointer stays valid
  // while this object lives (loaded libraries hold a reference to it).
  const char* option(const char* plugin, const char* key) const;

  // Every option, by "<plugin>.<key>": isolated_load hands them to the switchyard-probe
  // helper, which builds its own HostServices from them.
  const std::map<std::string, std::string>& options() const { return options_; }

  // Makes `services` the one used by callbacks that arrive outside any HostCallScope.
  static void make_default(const std::shared_ptr<const HostServices>& services);

 private:
  std::map<std::string, std::string> options_;
};

// While alive, sy_host callbacks made on this thread use `services` and, when `captured` is
// not null, append each line the plugin logs to it ("warn: <message>"). `isolated` is for the
// process that isolated_load loads a candidate in: lines are only captured (no spdlog: in the
// fork fallback its locks may have been held by another thread at fork time) and no lock is
// ever taken.
class HostCallScope {
 public:
  HostCallScope(const HostServices* services, std::vector<std::string>* captured,
                bool isolated = false) noexcept;
  ~HostCallScope();
  HostCallScope(const HostCallScope&) = delete;
  HostCallScope& operator=(const HostCallScope&) = delete;

  struct Context {
    const HostServices* services;
    std::vector<std::string>* captured;
    bool isolated;
  };

 private:
  Context context_;
  const Context* previous_;
};

// Lines a plugin logs while loading are capped, so that a chatty plugin cannot blow up a
// listing (or the pipe of an isolated load).
constexpr std::size_t kMaxCapturedLogLines = 200;

}  // namespace switchyard::detail

#endif
