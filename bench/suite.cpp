#include "bench/suite.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "testing/device_data.h"

namespace inorm::bench {
namespace {

// A small JSON reader: the toolchains on our machines ship no JSON library, and suites are tiny.
struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;
};

class Reader {
 public:
  explicit Reader(const std::string& text) : text_(text) {}

  bool parse(Json* out, std::string* error) {
    if (!value(out) || (skip(), pos_ != text_.size())) {
      *error = "JSON syntax error near offset " + std::to_string(pos_);
      return false;
    }
    return true;
  }

 private:
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  bool string(std::string* out) {
    if (!eat('"')) return false;
    out->clear();
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\') {
        if (++pos_ >= text_.size()) return false;
        const char e = text_[pos_];
        out->push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);  // suites need no \u escapes
      } else {
        out->push_back(text_[pos_]);
      }
      ++pos_;
    }
    return eat('"');
  }
  bool value(Json* out) {
    skip();
    if (pos_ >= text_.size()) return false;
    const char c = text_[pos_];
    if (c == '{') {
      ++pos_;
      out->kind = Json::Kind::kObject;
      if (eat('}')) return true;
      do {
        std::string key;
        Json item;
        if (!string(&key) || !eat(':') || !value(&item)) return false;
        out->object[key] = std::move(item);
      } while (eat(','));
      return eat('}');
    }
    if (c == '[') {
      ++pos_;
      out->kind = Json::Kind::kArray;
      if (eat(']')) return true;
      do {
        Json item;
        if (!value(&item)) return false;
        out->array.push_back(std::move(item));
      } while (eat(','));
      return eat(']');
    }
    if (c == '"') {
      out->kind = Json::Kind::kString;
      return string(&out->string);
    }
    for (const bool truth : {true, false}) {
      if (literal(truth ? "true" : "false")) {
        out->kind = Json::Kind::kBool;
        out->boolean = truth;
        return true;
      }
    }
    if (literal("null")) return true;
    const char* start = text_.c_str() + pos_;
    char* end = nullptr;
    out->number = std::strtod(start, &end);
    if (end == start) return false;
    out->kind = Json::Kind::kNumber;
    pos_ += static_cast<std::size_t>(end - start);
    return true;
  }

  const std::string& text_;
  std::size_t pos_ = 0;
};

Status bad_suite(const std::string& path, const std::string& message) {
  return Status(StatusCode::kInvalidArgument, path + ": " + message);
}

// Every key a case may carry, and its JSON kind. A key outside this list is refused rather than
// ignored: a misspelt "afine" or a "groups" on an instance_norm case would otherwise time some other
// case than the one the file describes. "headline" marks the suites' headline rows; timing ignores it.
// python/inorm/_suite.py holds the same list for python -m inorm.bench.
const std::map<std::string, Json::Kind>& case_keys() {
  static const std::map<std::string, Json::Kind> keys = {
      {"id", Json::Kind::kString},       {"shape", Json::Kind::kArray},        {"dtype", Json::Kind::kString},
      {"layout", Json::Kind::kString},   {"affine", Json::Kind::kBool},        {"data", Json::Kind::kString},
      {"op", Json::Kind::kString},       {"groups", Json::Kind::kNumber},      {"activation", Json::Kind::kString},
      {"negative_slope", Json::Kind::kNumber}, {"headline", Json::Kind::kBool}};
  return keys;
}

const char* kind_name(Json::Kind kind) {
  switch (kind) {
    case Json::Kind::kBool: return "a boolean";
    case Json::Kind::kNumber: return "a number";
    case Json::Kind::kString: return "a string";
    case Json::Kind::kArray: return "an array";
    case Json::Kind::kObject: return "an object";
    case Json::Kind::kNull: break;
  }
  return "null";
}

bool is_count(const Json& value, double least) {
  return value.kind == Json::Kind::kNumber && value.number >= least && value.number <= 9.0e15 &&
         value.number == static_cast<double>(static_cast<int64_t>(value.number));
}

}  // namespace

BenchCase seed_case() {
  BenchCase c;
  c.id = "seed-fp32";
  c.shape = {112, 64, 512, 512};
  return c;
}

Status load_suite(const std::string& path, std::vector<BenchCase>* cases) {
  std::ifstream file(path);
  if (!file) return bad_suite(path, "cannot open the file");
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string text = buffer.str();
  Json root;
  std::string error;
  if (!Reader(text).parse(&root, &error)) return bad_suite(path, error);
  const auto list = root.object.find("cases");
  if (root.kind != Json::Kind::kObject || list == root.object.end() || list->second.kind != Json::Kind::kArray) {
    return bad_suite(path, "expected an object with a \"cases\" array");
  }
  for (const auto& [key, value] : root.object) {
    if (key != "cases" && key != "about") return bad_suite(path, "unknown key \"" + key + "\" (a suite has \"about\" and \"cases\")");
  }
  const std::map<std::string, DType> dtypes = {{"float32", DType::kFloat32},
                                               {"float16", DType::kFloat16},
                                               {"bfloat16", DType::kBFloat16},
                                               {"float64", DType::kFloat64}};
  const std::map<std::string, Layout> layouts = {{"nchw", Layout::kContiguous},
                                                 {"nhwc", Layout::kChannelsLast}};
  std::map<std::string, Activation> activations;
  for (Activation a : {Activation::kNone, Activation::kRelu, Activation::kLeakyRelu, Activation::kSilu}) {
    activations[activation_name(a)] = a;
  }
  cases->clear();
  for (std::size_t index = 0; index < list->second.array.size(); ++index) {
    const Json& item = list->second.array[index];
    if (item.kind != Json::Kind::kObject) return bad_suite(path, "case " + std::to_string(index) + " is not an object");
    auto field = [&](const char* name) -> const Json* {
      const auto it = item.object.find(name);
      return it == item.object.end() ? nullptr : &it->second;
    };
    BenchCase c;
    const Json* id = field("id");
    c.id = id != nullptr && id->kind == Json::Kind::kString ? id->string : "case " + std::to_string(index);
    for (const auto& [key, value] : item.object) {
      const auto known = case_keys().find(key);
      if (known == case_keys().end()) return bad_suite(path, c.id + ": unknown key \"" + key + "\"");
      if (value.kind != known->second) {
        return bad_suite(path, c.id + ": \"" + key + "\" must be " + kind_name(known->second));
      }
    }
    const Json* shape = field("shape");
    const Json* dtype = field("dtype");
    if (!id || !shape || !dtype) return bad_suite(path, c.id + ": every case needs \"id\", \"shape\" and \"dtype\"");
    for (const Json& dim : shape->array) {
      if (!is_count(dim, 0)) return bad_suite(path, c.id + ": shape's sizes must be whole numbers >= 0");
      c.shape.push_back(static_cast<int64_t>(dim.number));
    }
    if (c.shape.size() < 3 || c.shape.size() > 5) {
      return bad_suite(path, c.id + ": shape must have 3 to 5 dimensions (N, C, spatial)");
    }
    const auto dt = dtypes.find(dtype->string);
    if (dt == dtypes.end()) return bad_suite(path, c.id + ": unknown dtype '" + dtype->string + "'");
    c.dtype = dt->second;
    if (const Json* layout = field("layout")) {
      const auto lt = layouts.find(layout->string);
      if (lt == layouts.end()) return bad_suite(path, c.id + ": unknown layout '" + layout->string + "'");
      c.layout = lt->second;
      c.layout_name = layout->string;
    }
    if (const Json* affine = field("affine")) c.affine = affine->boolean;
    if (const Json* data = field("data")) {
      testing::DataSpec spec;
      const Status parsed = testing::parse_data_spec(data->string, &spec);
      if (!parsed.ok()) return bad_suite(path, c.id + ": " + parsed.message());
      c.data = data->string;
    }
    if (const Json* op = field("op")) c.op = op->string;
    if (c.op != "instance_norm" && c.op != "group_norm") return bad_suite(path, c.id + ": unknown op '" + c.op + "'");
    const Json* groups = field("groups");
    if (c.op == "group_norm") {
      if (groups == nullptr || !is_count(*groups, 1)) return bad_suite(path, c.id + ": group_norm needs \"groups\" >= 1");
      c.groups = static_cast<int64_t>(groups->number);
    } else if (groups != nullptr) {
      return bad_suite(path, c.id + ": \"groups\" needs \"op\": \"group_norm\"");
    }
    if (const Json* activation = field("activation")) {
      const auto it = activations.find(activation->string);
      if (it == activations.end()) {
        return bad_suite(path, c.id + ": unknown activation '" + activation->string + "'");
      }
      c.activation = it->second;
    }
    if (const Json* slope = field("negative_slope")) {
      if (c.activation != Activation::kLeakyRelu) {
        return bad_suite(path, c.id + ": \"negative_slope\" needs \"activation\": \"leaky_relu\"");
      }
      c.negative_slope = slope->number;
    }
    cases->push_back(std::move(c));
  }
  return Status::Ok();
}

}  // namespace inorm::bench
