// Backend selection and the error that explains a failed one.
#include "select_backend.hpp"

#include "backend_names.hpp"
#include "did_you_mean.hpp"
#include "discovery.hpp"
#include "isolated_load.hpp"
#include "log.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

namespace switchyard::detail {
namespace {

namespace fs = std::filesystem;

enum class Outcome { Usable, NotFound, Disabled, Rejected, Unavailable, FamilyMissing };

// One try at a backend (the requested one, or the fallback).
struct Attempt {
  std::string name;  // after deprecated-name mapping; for a path, the name its file says
  bool by_path = false;
  std::string path;  // the file tried; empty when none was found
  Outcome outcome = Outcome::NotFound;
  std::string problem;  // a sentence: why it cannot be used
  LoadResult result;
};

const char* variable_for(Family family) {
  return family == Family::CrossEntropy ? "SWITCHYARD_CROSS_ENTROPY" : "SWITCHYARD_NORM";
}

const FamilyInfo& family_of(const PluginInfo& info, Family family) {
  return family == Family::CrossEntropy ? info.cross_entropy : info.norm;
}

std::string offered_families(const PluginInfo& info) {
  std::vector<std::string> offered;
  if (info.cross_entropy.offered) offered.emplace_back(family_name(Family::CrossEntropy));
  if (info.norm.offered) offered.emplace_back(family_name(Family::Norm));
  if (offered.empty()) return "no family at all";
  if (offered.size() == 1) return offered.front() + " only";
  return offered[0] + " and " + offered[1];
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  const fs::path made = fs::absolute(path, ec);
  return ec ? path : made.lexically_normal().string();
}

std::string logged_lines(const PluginInfo& info) {
  if (info.log.empty() || info.reason.find("it logged") != std::string::npos) return "";
  std::string text = " (the plugin logged: ";
  for (std::size_t i = 0; i < info.log.size(); ++i)
    text += (i == 0 ? "\"" : "; \"") + info.log[i] + "\"";
  return text + ")";
}

Attempt attempt_backend(const std::string& value, Family family, const Setting& requested,
                        const Settings& settings, const std::shared_ptr<const HostServices>& host,
                        LibraryCache& cache, std::vector<std::string>* notes) {
  Attempt attempt;
  attempt.name = value;
  if (value.empty()) {
    attempt.problem = "no backend name was given";
    return attempt;
  }
  if (looks_like_path(value)) {
    attempt.by_path = true;
    attempt.path = absolute(value);
    attempt.name = blank_plugin_info(attempt.path).name;
    std::error_code ec;
    if (!fs::exists(attempt.path, ec)) {
      attempt.problem = "the file " + attempt.path + " does not exist";
      return attempt;
    }
  } else {
    if (const std::optional<std::string> renamed = renamed_backend(value)) {
      const std::string note = "'" + value + "' is a deprecated name for the " +
                               family_name(family) + " backend '" + *renamed +
                               "'; ask for '" + *renamed + "' instead (requested by " +
                               requested.describe() + ")";
      warn_once("deprecated backend name: " + value, note);
      notes->push_back(note);
      attempt.name = *renamed;
    }
    if (!valid_plugin_name(attempt.name)) {
      attempt.problem = "'" + attempt.name +
                        "' is not a valid backend name (expected [a-z0-9_]+, or a path to a "
                        "libswitchyard-<name>.so file)";
      return attempt;
    }
    const std::optional<FoundFile> found = find_plugin_file(settings, attempt.name);
    if (!found) {
      attempt.problem =
          "no file named " + plugin_file_name(attempt.name) + " was found on the search path";
      return attempt;
    }
    attempt.path = found->path;
  }

  const std::string file_name = fs::path(attempt.path).filename().string();
  if (const std::optional<Setting> pattern =
          disabling_setting(settings, attempt.name, file_name)) {
    attempt.outcome = Outcome::Disabled;
    attempt.problem = attempt.path + " is " + disabled_reason(*pattern);
    return attempt;
  }

  attempt.result = cache.load(attempt.path, host);
  const PluginInfo& info = attempt.result.info;
  switch (info.state) {
    case PluginState::Ok:
      if (!family_of(info, family).offered) {
        attempt.outcome = Outcome::FamilyMissing;
        attempt.problem = "plugin '" + info.name + "' (" + attempt.path + ") does not offer " +
                          family_name(family) + "; it offers " + offered_families(info);
      } else {
        attempt.outcome = Outcome::Usable;
      }
      break;
    case PluginState::Unavailable:
      attempt.outcome = Outcome::Unavailable;
      attempt.problem = attempt.path + " cannot run here: " + info.reason + logged_lines(info);
      break;
    default:
      attempt.outcome = Outcome::Rejected;
      attempt.problem = attempt.path + " cannot be used: " + info.reason + logged_lines(info);
      break;
  }
  return attempt;
}

sy_status status_of(Outcome outcome) {
  return outcome == Outcome::FamilyMissing ? SY_ERR_UNSUPPORTED : SY_ERR_UNAVAILABLE;
}

std::string describe_candidate(const PluginInfo& info) {
  std::string text = info.file_name + ": ";
  if (info.state == PluginState::Ok) {
    text += info.name + (info.version.empty() ? "" : " " + info.version) + ", ok, offers " +
            offered_families(info);
    return text;
  }
  // Reasons name the file so that they stand alone; here the line already does.
  std::string reason = info.reason;
  if (reason.compare(0, info.file_name.size(), info.file_name) == 0) {
    reason.erase(0, info.file_name.size());
    if (reason.compare(0, 2, ": ") == 0) reason.erase(0, 2);
    if (reason.compare(0, 1, " ") == 0) reason.erase(0, 1);
  }
  return text + plugin_state_name(info.state) + ": " + reason;
}

struct Listing {
  std::string text;                    // "Searched, in order:" and the locations
  std::vector<std::string> available;  // usable names for the family, in search order
  std::vector<std::string> all_names;  // every name seen, for did-you-mean
};

Listing list_search_path(Family family, const Settings& settings, const HostServices& host) {
  Listing listing;
  std::ostringstream out;
  out << "Searched, in order:";
  std::set<std::string> seen;
  for (const SearchLocation& location : list_candidates(settings)) {
    out << "\n  " << location.path << " (" << where_from(location.origin) << "): ";
    if (!location.exists) {
      out << "does not exist";
      continue;
    }
    if (location.candidates.empty()) {
      out << "no libswitchyard-*.so files";
      continue;
    }
    out << location.candidates.size()
        << (location.candidates.size() == 1 ? " plugin file" : " plugin files");
    for (const PluginInfo& listed : location.candidates) {
      PluginInfo info = listed;
      if (info.state != PluginState::Disabled) info = isolated_load(listed.path, host);
      out << "\n    " << describe_candidate(info);
      listing.all_names.push_back(info.name);
      const bool first_of_its_name = seen.insert(info.name).second;
      if (first_of_its_name && info.state == PluginState::Ok && family_of(info, family).offered)
        listing.available.push_back(info.name);
      else if (!first_of_its_name)
        out << " (shadowed by an earlier file of the same name)";
    }
  }
  listing.text = out.str();
  return listing;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::string next_step(Family family, const Attempt& attempt,
                      const std::vector<std::string>& available) {
  const std::string choose =
      available.empty()
          ? std::string()
          : "choose one of the available backends (e.g. " + std::string(variable_for(family)) +
                "=" + available.front() + "), ";
  std::string fix;
  switch (attempt.outcome) {
    case Outcome::NotFound:
      fix = attempt.by_path
                ? "correct the path, "
                : "put " + plugin_file_name(attempt.name) +
                      " into one of the folders above or set SWITCHYARD_PLUGIN_PATH=<folder "
                      "with " +
                      plugin_file_name(attempt.name) + ">, ";
      break;
    case Outcome::Disabled: fix = "remove the matching pattern from SWITCHYARD_DISABLE, "; break;
    case Outcome::Rejected:
      fix = "rebuild or replace " + fs::path(attempt.path).filename().string() +
            " (see the reason above), ";
      break;
    case Outcome::Unavailable: fix = "fix the reason above on this machine, "; break;
    case Outcome::FamilyMissing:
      fix = "ask for a backend that offers " + std::string(family_name(family)) + ", ";
      break;
    case Outcome::Usable: break;
  }
  return "Next step: " + fix + choose + "or run `switchyard doctor` to see every plugin and "
                                        "setting.";
}

[[noreturn]] void throw_unusable(Family family, const Setting& requested, const Attempt& first,
                                 const std::optional<Attempt>& fallback, const Settings& settings,
                                 const HostServices& host) {
  const Listing listing = list_search_path(family, settings, host);
  std::ostringstream out;
  out << "No usable " << family_name(family) << " backend for the request "
      << requested.describe() << ": " << first.problem;
  if (first.outcome == Outcome::NotFound && !first.by_path) {
    std::vector<std::string> candidates = listing.all_names;
    for (const std::string& builtin : builtin_backends()) candidates.push_back(builtin);
    candidates.erase(std::remove(candidates.begin(), candidates.end(), first.name),
                     candidates.end());
    out << did_you_mean(first.name, candidates);
  }
  out << ".";
  if (fallback) {
    out << "\nThe fallback '" << fallback->name << "' could not be used either: "
        << fallback->problem << ".";
  }
  out << "\n" << listing.text << "\n";
  if (listing.available.empty())
    out << "No " << family_name(family) << " backend is available on this search path.";
  else
    out << "Available " << family_name(family) << " backends: " << joined(listing.available)
        << ".";
  out << "\n" << next_step(family, first, listing.available);
  throw Error(status_of(first.outcome), out.str());
}

void check_determinism(Family family, const Settings& settings, const PluginInfo& info,
                       sy_determinism determinism, std::vector<std::string>* notes) {
  if (settings.deterministic.value != "1") return;
  if (determinism == SY_NONDETERMINISTIC) {
    throw Error(SY_ERR_UNSUPPORTED,
                "The " + std::string(family_name(family)) + " backend '" + info.name + "' (" +
                    info.path + ") declares itself NONDETERMINISTIC, but determinism is required: " +
                    "deterministic = " + settings.deterministic.describe() + ". Next step: choose a backend that declares DETERMINISTIC (`switchyard "
                    "list` shows each backend's determinism), or turn the requirement off "
                    "where it was set.");
  }
  if (determinism == SY_DETERMINISM_UNKNOWN) {
    const std::string note = "the " + std::string(family_name(family)) + " backend '" +
                             info.name +
                             "' does not state whether it is deterministic (UNKNOWN), and "
                             "determinism is required: deterministic = " +
                             settings.deterministic.describe() +
                             "; run-to-run bit-exactness is not guaranteed";
    warn_once("determinism unknown: " + note, note);
    notes->push_back(note);
  }
}

}  // namespace

const char* determinism_name(sy_determinism determinism) noexcept {
  switch (determinism) {
    case SY_DETERMINISTIC: return "DETERMINISTIC";
    case SY_NONDETERMINISTIC: return "NONDETERMINISTIC";
    default: return "UNKNOWN";
  }
}

LoadResult LibraryCache::load(const std::string& path,
                              const std::shared_ptr<const HostServices>& host) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = loaded_.find(path);
  if (found != loaded_.end()) return found->second;
  LoadResult result = PluginLibrary::load(path, host);
  if (result.library != nullptr && result.info.state == PluginState::Ok)
    loaded_.emplace(path, result);
  return result;
}

Selected select_backend(Family family, const Settings& settings,
                        const std::shared_ptr<const HostServices>& host, LibraryCache& cache) {
  const Setting& requested =
      family == Family::CrossEntropy ? settings.cross_entropy : settings.norm;
  Selected selected;
  selected.selection.family = family;
  selected.selection.requested = requested;
  std::vector<std::string>& notes = selected.selection.notes;

  const Attempt first =
      attempt_backend(requested.value, family, requested, settings, host, cache, &notes);
  const Attempt* used = &first;
  std::optional<Attempt> fallback;
  if (first.outcome != Outcome::Usable && !requested.fallback.empty()) {
    fallback = attempt_backend(requested.fallback, family, requested, settings, host, cache,
                               &notes);
    if (fallback->outcome == Outcome::Usable) {
      const std::string note = "the " + std::string(family_name(family)) + " backend '" +
                               first.name + "' cannot be used (" + first.problem +
                               "); using '" + fallback->name + "' instead, as " +
                               (requested.origin.empty() ? requested.describe()
                                                         : requested.origin) +
                               " allows";
      warn_once("backend fallback: " + note, note);
      notes.push_back(note);
      used = &*fallback;
    }
  }
  if (used->outcome != Outcome::Usable)
    throw_unusable(family, requested, first, fallback, settings, *host);

  const PluginInfo& info = used->result.info;
  const sy_determinism determinism = family == Family::CrossEntropy
                                         ? used->result.library->cross_entropy()->determinism
                                         : used->result.library->norm()->determinism;
  check_determinism(family, settings, info, determinism, &notes);
  selected.selection.resolved_name = info.name;
  selected.selection.plugin = info;
  selected.library = used->result.library;
  return selected;
}

}  // namespace switchyard::detail
