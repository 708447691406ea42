//===- MapFileReader.cpp - Where passes get maps from files ---------------===//

#include "ucp/Dialect/UCP/IR/MapFileReader.h"

#include <atomic>

using namespace ucp;

/// Set once at start-up by a tool; read by every pass initialization.
static std::atomic<MapFileReader> registeredReader{nullptr};

void ucp::setMapFileReader(MapFileReader reader) { registeredReader = reader; }

MapFileReader ucp::getMapFileReader() { return registeredReader; }
