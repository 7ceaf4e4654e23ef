/*
 * disaggsim: SIM_FLOWS CSV reader and FCT_RECORDS CSV writer.
 */
#include "flow-csv.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <unordered_set>

namespace disaggsim
{

const char* const kSimFlowsHeader = "flow_id,start_ns,src_host,dst_host,size_bytes";
const char* const kFctRecordsHeader = "flow_id,src_host,dst_host,size_bytes,start_ns,finish_ns,"
                                      "fct_ns,ideal_fct_ns,slowdown,finished";

namespace
{

std::string
Where (const std::string& path, uint64_t line, const char* field)
{
    std::ostringstream os;
    os << path << ":" << line << ": field '" << field << "': ";
    return os.str ();
}

int64_t
ParseInt (const std::string& text, const std::string& path, uint64_t line, const char* field,
          int64_t min, int64_t max, const char* expected)
{
    if (text.empty ())
    {
        throw InputError (Where (path, line, field) + "expected " + expected + ", got ''");
    }
    errno = 0;
    char* end = nullptr;
    long long value = std::strtoll (text.c_str (), &end, 10);
    if (errno != 0 || *end != '\0' || value < min || value > max)
    {
        throw InputError (Where (path, line, field) + "expected " + expected + ", got '" + text +
                          "'");
    }
    return value;
}

} // namespace

std::vector<ns3::FlowSpec>
ReadSimFlowsCsv (const std::string& path, uint32_t nHosts)
{
    std::ifstream in (path);
    if (!in)
    {
        throw InputError (path + ": cannot open: " + std::strerror (errno));
    }
    std::string text;
    uint64_t line = 1;
    if (!std::getline (in, text))
    {
        throw InputError (path + ":1: expected header '" + kSimFlowsHeader +
                          "', got an empty file");
    }
    if (!text.empty () && text.back () == '\r')
    {
        text.pop_back ();
    }
    if (text != kSimFlowsHeader)
    {
        throw InputError (path + ":1: expected header '" + kSimFlowsHeader + "', got '" + text +
                          "'");
    }
    static const char* const fields[] = {"flow_id", "start_ns", "src_host", "dst_host",
                                         "size_bytes"};
    const std::string hostRange = "an integer host in [0, " + std::to_string (nHosts) + ")";
    std::vector<ns3::FlowSpec> flows;
    std::unordered_set<uint64_t> ids;
    // The cells of a line split at every ',' (an empty line has none), into strings reused
    // from line to line: a std::istringstream per line cost a third of reading the flows
    // (its locale set-up; bench/RESULTS.md issue #26 "Campaign CPU").
    std::vector<std::string> cells;
    while (std::getline (in, text))
    {
        ++line;
        if (!text.empty () && text.back () == '\r')
        {
            text.pop_back ();
        }
        size_t nCells = 0;
        for (size_t begin = 0; !text.empty ();)
        {
            const size_t comma = text.find (',', begin);
            const size_t end = comma == std::string::npos ? text.size () : comma;
            if (nCells == cells.size ())
            {
                cells.emplace_back ();
            }
            cells[nCells++].assign (text, begin, end - begin);
            if (comma == std::string::npos)
            {
                break;
            }
            begin = comma + 1;
        }
        if (nCells != 5)
        {
            std::ostringstream os;
            os << path << ":" << line << ": expected 5 fields (" << kSimFlowsHeader << "), got "
               << nCells;
            throw InputError (os.str ());
        }
        ns3::FlowSpec flow;
        flow.flowId =
            ParseInt (cells[0], path, line, fields[0], 0, INT64_MAX, "a non-negative integer");
        flow.startNs = ParseInt (cells[1], path, line, fields[1], 0, INT64_MAX / 2,
                                 "a non-negative integer (ns)");
        flow.srcHost = static_cast<uint32_t> (ParseInt (cells[2], path, line, fields[2], 0,
                                                        int64_t (nHosts) - 1, hostRange.c_str ()));
        flow.dstHost = static_cast<uint32_t> (ParseInt (cells[3], path, line, fields[3], 0,
                                                        int64_t (nHosts) - 1, hostRange.c_str ()));
        flow.sizeBytes =
            ParseInt (cells[4], path, line, fields[4], 1, INT64_MAX, "a positive integer (bytes)");
        if (flow.srcHost == flow.dstHost)
        {
            throw InputError (Where (path, line, fields[3]) +
                              "expected a host other than src_host " +
                              std::to_string (flow.srcHost) + ", got '" + cells[3] + "'");
        }
        if (!ids.insert (flow.flowId).second)
        {
            throw InputError (Where (path, line, fields[0]) + "expected a unique flow id, got '" +
                              cells[0] + "' again");
        }
        flows.push_back (flow);
    }
    return flows;
}

void
WriteFileAtomically (const std::string& path, const std::string& text)
{
    const std::string tmp = path + ".tmp." + std::to_string (::getpid ());
    {
        std::ofstream out (tmp, std::ios::binary | std::ios::trunc);
        if (!out)
        {
            throw std::runtime_error (tmp + ": cannot create: " + std::strerror (errno));
        }
        out << text;
        out.flush ();
        if (!out)
        {
            std::remove (tmp.c_str ());
            throw std::runtime_error (tmp + ": write failed");
        }
    }
    if (std::rename (tmp.c_str (), path.c_str ()) != 0)
    {
        std::string reason = std::strerror (errno);
        std::remove (tmp.c_str ());
        throw std::runtime_error (path + ": cannot rename from " + tmp + ": " + reason);
    }
}

void
WriteFctCsv (const std::string& path, const std::vector<FctRecord>& records)
{
    std::string text;
    text.reserve (records.size () * 64 + 128);
    text += kFctRecordsHeader;
    text += '\n';
    // std::to_chars, not snprintf (a quarter of a short run's CPU went to printf's format
    // parsing): integers in decimal, the slowdown as printf's "%.9f" would print it
    // (C++17 [charconv.to.chars]: fixed with a precision is "as if by printf"; both
    // round the exact binary value correctly).  A "%.9f" double has at most 320
    // characters (DBL_MAX: 309 integer digits), so the conversions cannot fail.
    char number[384];
    const auto append = [&text, &number] (auto value, char separator) {
        text.append (number, std::to_chars (number, number + sizeof (number), value).ptr);
        text += separator;
    };
    for (const FctRecord& r : records)
    {
        append (r.flow.flowId, ',');
        append (r.flow.srcHost, ',');
        append (r.flow.dstHost, ',');
        append (r.flow.sizeBytes, ',');
        append (r.flow.startNs, ',');
        append (r.finishNs, ',');
        append (r.fctNs, ',');
        append (r.idealFctNs, ',');
        if (r.finished)
        {
            text.append (number, std::to_chars (number, number + sizeof (number), r.slowdown,
                                                std::chars_format::fixed, 9)
                                     .ptr);
        }
        else
        {
            text += "nan";
        }
        text += r.finished ? ",1\n" : ",0\n";
    }
    WriteFileAtomically (path, text);
}

} // namespace disaggsim
