//===- HostKernels.cpp - Generated CUDA compiled for the host -------------===//

#include "HostKernels.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

using namespace ucp::testing;

/// What the emitted source takes from CUDA, for a host compiler.
static const char *const kPrelude = R"cpp(
#define __device__
#define __global__
struct UcpDim3 { unsigned x, y, z; };
static UcpDim3 blockIdx, threadIdx, blockDim, gridDim;
)cpp";

std::string ucp::testing::getHostEntryName(const std::string &kernel) {
  return "ucp_host_" + kernel;
}

/// The host entry of every `extern "C" __global__` kernel of `source`: each
/// parameter is read from the pointer cuLaunchKernel would be given.
static std::string getHostEntries(const std::string &source) {
  static const std::regex kernel(
      R"re(extern "C" __global__ void (\w+)\(([^)]*)\))re");
  std::ostringstream os;
  for (std::sregex_iterator it(source.begin(), source.end(), kernel), end;
       it != end; ++it) {
    std::string name = (*it)[1], params = (*it)[2], args;
    std::istringstream list(params);
    std::string param;
    for (int i = 0; std::getline(list, param, ','); ++i) {
      // The type is what precedes the parameter's name.
      size_t nameStart = param.find_last_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
      std::string type = param.substr(0, nameStart + 1);
      args += (i ? ", " : "") +
              ("*(" + type + " *)params[" + std::to_string(i) + "]");
    }
    os << "extern \"C\" void " << getHostEntryName(name)
       << "(unsigned blocks, unsigned threads, void **params) {\n"
          "  gridDim.x = blocks;\n"
          "  blockDim.x = threads;\n"
          "  for (blockIdx.x = 0; blockIdx.x < blocks; ++blockIdx.x)\n"
          "    for (threadIdx.x = 0; threadIdx.x < threads; ++threadIdx.x)\n"
          "      "
       << name << "(" << args << ");\n}\n";
  }
  return os.str();
}

bool ucp::testing::compileKernelsForHost(const std::string &cudaSource,
                                         const std::string &library,
                                         std::string &log) {
  std::string source = library + ".cpp", output = library + ".log";
  {
    std::ofstream os(source);
    os << kPrelude << cudaSource << "\n" << getHostEntries(cudaSource);
    if (!os) {
      log = "cannot write " + source;
      return false;
    }
  }
  std::string command = std::string("'") + UCP_HOST_CXX +
                        "' -std=c++17 -O1 -shared -fPIC -o '" + library +
                        "' '" + source + "' > '" + output + "' 2>&1";
  int status = std::system(command.c_str());
  std::ifstream in(output);
  log.assign(std::istreambuf_iterator<char>(in), {});
  std::remove(source.c_str());
  std::remove(output.c_str());
  if (status != 0)
    log = command + " failed:\n" + log;
  return status == 0;
}
