/*
 * disaggsim: SIM_FLOWS CSV reader and FCT_RECORDS CSV writer (schemas in disaggsim/schemas.py).
 */
#ifndef DISAGGSIM_SIM_FLOW_CSV_H
#define DISAGGSIM_SIM_FLOW_CSV_H

#include "topologies/model/flow-transport.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace disaggsim
{

/// Bad input: the message names file, line and field and says what was expected.
class InputError : public std::runtime_error
{
  public:
    using std::runtime_error::runtime_error;
};

/// The SIM_FLOWS header, exactly (disaggsim/schemas.py SIM_FLOWS).
extern const char* const kSimFlowsHeader;
/// The FCT_RECORDS header, exactly (disaggsim/schemas.py FCT_RECORDS).
extern const char* const kFctRecordsHeader;

/**
 * Read a SIM_FLOWS CSV: header kSimFlowsHeader, then one flow per line with integer fields
 * flow_id >= 0 (unique), start_ns >= 0, 0 <= src_host, dst_host < nHosts, src_host !=
 * dst_host, size_bytes > 0.  Blank lines are not allowed.
 * \throws InputError "PATH:LINE: field 'NAME': expected ..., got '...'" on the first bad line,
 * or "PATH: cannot open" if the file is unreadable.
 */
std::vector<ns3::FlowSpec> ReadSimFlowsCsv (const std::string& path, uint32_t nHosts);

/// One FCT_RECORDS row.  finishNs = fctNs = -1 and slowdown = NaN when unfinished.
struct FctRecord
{
    ns3::FlowSpec flow;
    int64_t finishNs{-1};
    int64_t fctNs{-1};
    int64_t idealFctNs{0};
    double slowdown{std::nan ("")};
    bool finished{false};
};

/**
 * Write FCT_RECORDS rows (in the given order) to \p path atomically: the rows go to a
 * temporary file in the same directory, which is renamed over \p path once complete.
 * \throws std::runtime_error if the file cannot be written.
 */
void WriteFctCsv (const std::string& path, const std::vector<FctRecord>& records);

/// Write \p text to \p path atomically (temporary file + rename).
void WriteFileAtomically (const std::string& path, const std::string& text);

} // namespace disaggsim

#endif // DISAGGSIM_SIM_FLOW_CSV_H
