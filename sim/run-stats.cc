/*
 * disaggsim: the STATS.json of one run.
 */
#include "run-stats.h"

#include "topologies/model/switch-mmu.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <sys/resource.h>

namespace disaggsim
{

void
CollectFabricStats (ns3::Ptr<const ns3::ClosTopology> topology, RunStats& stats)
{
    for (uint32_t h = 0; h < topology->GetNHosts (); ++h)
    {
        ns3::Ptr<ns3::FabricNetDevice> device = topology->GetHostDevice (h);
        stats.dataPacketsDelivered += device->GetRxDataPackets ();
        stats.packetsDelivered += device->GetRxPackets ();
        stats.ceMarks += device->GetQueue ()->GetMarkedPackets ();
    }
    for (const auto& port : topology->GetSwitchPorts ())
    {
        stats.ceMarks += port->GetQueue ()->GetMarkedPackets ();
    }
    stats.packetsDropped = topology->GetHostNicDrops () + topology->GetSwitchPortDrops ();
    if (!topology->GetPfcMonitor ())
    {
        return; // lossy: no PFC, no MMU
    }
    std::vector<ns3::Ptr<ns3::FabricNetDevice>> ports = topology->GetSwitchPorts ();
    for (uint32_t h = 0; h < topology->GetNHosts (); ++h)
    {
        ports.push_back (topology->GetHostDevice (h));
    }
    for (const auto& port : ports)
    {
        stats.pfcFrames += port->GetPfcFramesSent ();
        for (uint8_t c = 0; c < ns3::kFabricTrafficClasses; ++c)
        {
            stats.pausedNs += port->GetPausedTime (c).GetNanoSeconds ();
        }
    }
    for (const auto& sw : topology->GetSwitches ())
    {
        auto mmu = ns3::DynamicCast<ns3::SwitchMmu> (sw->GetSharedBuffer ());
        for (uint32_t port = 0; mmu && port < sw->GetNPorts (); ++port)
        {
            for (uint8_t c = 0; c < ns3::kFabricTrafficClasses; ++c)
            {
                stats.peakIngressBytes =
                    std::max (stats.peakIngressBytes, mmu->GetPeakIngressBytes (port, c));
            }
        }
    }
    stats.longestPauseChain = topology->GetPfcMonitor ()->GetLongestPauseChain ();
}

long
PeakRssKb ()
{
    // VmHWM of /proc/self/status: the peak of this address space, which exec starts afresh.
    // getrusage's ru_maxrss is not reset by exec, so a driver forked from a large parent
    // (Python with pandas: ~100 MiB) reported the parent's RSS as its own peak
    // (bench/RESULTS.md, "Side by side with the authors' simulator").
    if (std::FILE* status = std::fopen ("/proc/self/status", "r"))
    {
        char line[256];
        long hwmKb = -1;
        while (std::fgets (line, sizeof (line), status) != nullptr)
        {
            if (std::sscanf (line, "VmHWM: %ld kB", &hwmKb) == 1)
            {
                break;
            }
        }
        std::fclose (status);
        if (hwmKb >= 0)
        {
            return hwmKb;
        }
    }
    struct rusage usage;
    getrusage (RUSAGE_SELF, &usage);
    return usage.ru_maxrss; // KiB on Linux
}

std::vector<std::pair<std::string, std::string>>
ResolvedAttributes (const std::vector<ns3::TypeId>& types)
{
    std::vector<std::pair<std::string, std::string>> out;
    for (const ns3::TypeId& tid : types)
    {
        for (std::size_t i = 0; i < tid.GetAttributeN (); ++i)
        {
            ns3::TypeId::AttributeInformation info = tid.GetAttribute (i);
            std::string type = info.checker->GetValueTypeName ();
            if (type == "ns3::PointerValue" || type == "ns3::CallbackValue" ||
                type == "ns3::ObjectPtrContainerValue")
            {
                continue;
            }
            out.emplace_back (tid.GetName () + "::" + info.name,
                              info.initialValue->SerializeToString (info.checker));
        }
    }
    return out;
}

namespace
{

std::string
Quote (const std::string& text)
{
    std::string out = "\"";
    for (char c : text)
    {
        switch (c)
        {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            default:
                if (static_cast<unsigned char> (c) < 0x20)
                {
                    char buf[8];
                    std::snprintf (buf, sizeof (buf), "\\u%04x", c);
                    out += buf;
                }
                else
                {
                    out += c;
                }
        }
    }
    return out + "\"";
}

void
WriteObject (std::ostringstream& os, const char* name,
             const std::vector<std::pair<std::string, std::string>>& entries, const char* indent)
{
    os << indent << Quote (name) << ": {";
    for (std::size_t i = 0; i < entries.size (); ++i)
    {
        os << (i ? ",\n" : "\n") << indent << "  " << Quote (entries[i].first) << ": "
           << Quote (entries[i].second);
    }
    os << "\n" << indent << "}";
}

} // namespace

std::string
StatsJson (const RunStats& stats,
           const std::vector<std::pair<std::string, std::string>>& transportStats,
           const std::vector<std::pair<std::string, std::string>>& options,
           const std::vector<std::pair<std::string, std::string>>& derived,
           const std::vector<std::pair<std::string, std::string>>& attributes)
{
    std::ostringstream os;
    char wall[32];
    std::snprintf (wall, sizeof (wall), "%.6f", stats.wallSeconds);
    os << "{\n"
       << "  \"wall_s\": " << wall << ",\n"
       << "  \"sim_time_ns\": " << stats.simTimeNs << ",\n"
       << "  \"events\": " << stats.events << ",\n"
       << "  \"data_packets_delivered\": " << stats.dataPacketsDelivered << ",\n"
       << "  \"packets_delivered\": " << stats.packetsDelivered << ",\n"
       << "  \"packets_dropped\": " << stats.packetsDropped << ",\n"
       << "  \"ce_marks\": " << stats.ceMarks << ",\n"
       << "  \"pfc_frames\": " << stats.pfcFrames << ",\n"
       << "  \"paused_ns\": " << stats.pausedNs << ",\n"
       << "  \"peak_ingress_bytes\": " << stats.peakIngressBytes << ",\n"
       << "  \"longest_pause_chain\": " << stats.longestPauseChain << ",\n"
       << "  \"flows\": " << stats.flows << ",\n"
       << "  \"flows_finished\": " << stats.flowsFinished << ",\n"
       << "  \"peak_rss_kb\": " << stats.peakRssKb << ",\n";
    WriteObject (os, "transport", transportStats, "  ");
    os << ",\n  \"config\": {\n";
    WriteObject (os, "options", options, "    ");
    os << ",\n";
    WriteObject (os, "derived", derived, "    ");
    os << ",\n";
    WriteObject (os, "attributes", attributes, "    ");
    os << "\n  }\n}\n";
    return os.str ();
}

} // namespace disaggsim
