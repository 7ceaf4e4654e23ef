/*
 * disaggsim-ns3: run SIM_FLOWS over a Clos fabric with one transport and write FCT_RECORDS.
 *
 *   disaggsim-ns3 --flows=FLOWS.csv --out=FCT.csv --stats=STATS.json --protocol=tcp|dctcp
 *                 [--racks=9 --hostsPerRack=16 --spines=4 --accessRateGbps=40
 *                  --spineRateFactor=4 --bufferBytes=36864 --switchDelayNs=240
 *                  --intraRackCableM=4 --interRackCableM=40 --propNsPerM=5 --mssBytes=1460
 *                  --seed=1 --stopTimeNs=-1 --drainNs=1000000000 --cxlTier=false]
 *                 [--ns3::SomeClass::Attribute=value ...]
 *   disaggsim-ns3 --list-capabilities
 *
 * --list-capabilities prints, one per line, "protocol NAME" for every registered transport
 * (then "alias FORMER NAME" if it was renamed: --protocol=FORMER runs NAME with a notice)
 * and "attribute ns3::Class::Attribute" for every attribute that the command line's
 * --ns3::Class::Attribute=value accepts, then exits 0.  Those are each TypeId's own
 * attributes only: Config::SetDefaultFailSafe, behind that option, looks the name up among
 * TypeId::GetAttribute (0 .. GetAttributeN - 1), not the parents' (an inherited attribute
 * is set on the class that declares it).  The Python side (disaggsim.sim.runner
 * driver_capabilities) reads the listing to validate a campaign before its first run.
 *
 * Topology defaults are the paper's (Gao et al. OSDI'16 §3.3, §4.2, Table 4); each
 * shorthand sets the ns3::ClosTopology attribute of the same meaning, so attributes stay the
 * one configuration path.  --cxlTier=true serves each rack's accesses from a CXL pool and
 * carries the inter-rack ones between the racks' daemons over the chosen transport
 * (ns3::CxlRackTier, topologies/doc/cxl.md; its attributes set it up); a flow's ideal FCT
 * is then its lone-access time (CxlRackTier::LoneAccessTime).  Exit codes: 0 ok, 2 bad input (nothing written), 1 other errors.
 */
#include "sim/flow-csv.h"
#include "sim/run-stats.h"
#include "topologies/helper/clos-helper.h"
#include "topologies/model/cxl-rack-tier.h"
#include "topologies/model/flow-transport.h"

#include "ns3/core-module.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <unordered_map>

using namespace ns3;

NS_LOG_COMPONENT_DEFINE ("DisaggsimNs3");

namespace
{

/// Collects FlowFinished reports; stops the simulation when every flow has finished.
struct FinishRecorder
{
    std::unordered_map<uint64_t, std::size_t> indexOfFlow;
    std::vector<Time> finish;
    std::vector<bool> finished;
    uint64_t nFinished{0};

    void OnFinished (uint64_t flowId, Time at)
    {
        std::size_t i = indexOfFlow.at (flowId);
        if (finished[i])
        {
            return;
        }
        finished[i] = true;
        finish[i] = at;
        if (++nFinished == finished.size ())
        {
            Simulator::Stop ();
        }
    }
};

/// \returns the value of --name=VALUE in argv, or \p fallback.
std::string
PreScan (int argc, char** argv, const std::string& name, const std::string& fallback)
{
    const std::string prefix = "--" + name + "=";
    for (int i = 1; i < argc; ++i)
    {
        if (std::strncmp (argv[i], prefix.c_str (), prefix.size ()) == 0)
        {
            return argv[i] + prefix.size ();
        }
    }
    return fallback;
}

/// Prints the --list-capabilities listing (see the file comment) to \p os.
void
ListCapabilities (std::ostream& os)
{
    for (const std::string& name : FlowTransportRegistry::GetNames ())
    {
        os << "protocol " << name << "\n";
        const FlowTransportRegistry::Entry* entry = FlowTransportRegistry::Find (name);
        if (!entry->formerName.empty ())
        {
            os << "alias " << entry->formerName << " " << name << "\n";
        }
    }
    for (uint16_t i = 0; i < TypeId::GetRegisteredN (); ++i)
    {
        const TypeId tid = TypeId::GetRegistered (i);
        for (std::size_t j = 0; j < tid.GetAttributeN (); ++j)
        {
            os << "attribute " << tid.GetName () << "::" << tid.GetAttribute (j).name << "\n";
        }
    }
}

int
Run (int argc, char** argv)
{
    for (int i = 1; i < argc; ++i)
    {
        if (std::strcmp (argv[i], "--list-capabilities") == 0)
        {
            ListCapabilities (std::cout);
            return 0;
        }
    }
    const auto wallStart = std::chrono::steady_clock::now ();
    Time::SetResolution (Time::PS);
    GlobalValue::Bind ("ChecksumEnabled", BooleanValue (false));

    std::string protocol = PreScan (argc, argv, "protocol", "tcp");
    const FlowTransportRegistry::Entry* entry = FlowTransportRegistry::Find (protocol);
    if (entry == nullptr && (entry = FlowTransportRegistry::FindFormer (protocol)) != nullptr)
    {
        std::cerr << "disaggsim-ns3: notice: protocol '" << protocol << "' is now called '"
                  << entry->name << "' (README, \"Protocols\")\n";
        protocol = entry->name;
    }
    if (entry == nullptr)
    {
        std::cerr << "disaggsim-ns3: --protocol: expected one of";
        for (const std::string& name : FlowTransportRegistry::GetNames ())
        {
            std::cerr << " " << name;
        }
        std::cerr << ", got '" << protocol << "'\n";
        return 2;
    }
    entry->setDefaults ();

    std::string flowsPath;
    std::string outPath;
    std::string statsPath;
    std::string protocolArg = protocol;
    double accessRateGbps = 40;
    double switchDelayNs = 240;
    double propNsPerM = 5;
    uint32_t mssBytes = 0;
    uint32_t seed = 1;
    int64_t stopTimeNs = -1;
    int64_t drainNs = 1000000000;
    // The event queue.  Any ns3::Scheduler gives the same event order (ns-3 breaks time ties
    // by insertion uid), so results do not depend on this choice, only speed does.  Measured
    // on pFabric (bench/RESULTS.md, "Event scheduler"): std::priority_queue beats ns-3's
    // HeapScheduler (its sift-down dominated the profile) and the calendar queue, which is
    // fast on a dense incast but degrades on long runs with few events pending; our 4-ary
    // heap (topologies/model/four-ary-heap-scheduler.h) beats std::priority_queue (pHost
    // "Speed" in bench/RESULTS.md).
    std::string scheduler = "ns3::FourAryHeapScheduler";
    bool cxlTier = false;
    CommandLine cmd (__FILE__);
    cmd.Usage ("Simulate SIM_FLOWS over a Clos fabric; write FCT_RECORDS and STATS.json.");
    cmd.AddValue ("flows", "SIM_FLOWS CSV to read", flowsPath);
    cmd.AddValue ("out", "FCT_RECORDS CSV to write", outPath);
    cmd.AddValue ("stats", "STATS.json to write", statsPath);
    cmd.AddValue ("protocol", "transport name (registered transports)", protocolArg);
    cmd.AddValue ("racks", "ns3::ClosTopology::Racks");
    cmd.AddValue ("hostsPerRack", "ns3::ClosTopology::HostsPerRack");
    cmd.AddValue ("spines", "ns3::ClosTopology::Spines");
    cmd.AddValue ("spineRateFactor", "ns3::ClosTopology::SpineRateFactor");
    cmd.AddValue ("bufferBytes", "ns3::ClosTopology::BufferBytes");
    cmd.AddValue ("fabric", "ns3::ClosTopology::Fabric");
    cmd.AddValue ("intraRackCableM", "ns3::ClosTopology::IntraRackCableM");
    cmd.AddValue ("interRackCableM", "ns3::ClosTopology::InterRackCableM");
    cmd.AddValue ("accessRateGbps", "host-ToR rate in Gbps (ns3::ClosTopology::AccessRate)",
                  accessRateGbps);
    cmd.AddValue ("switchDelayNs", "switching delay in ns (ns3::ClosTopology::SwitchingDelay)",
                  switchDelayNs);
    cmd.AddValue ("propNsPerM", "propagation ns per m (ns3::ClosTopology::PropagationPerM)",
                  propNsPerM);
    cmd.AddValue ("mssBytes",
                  "data payload per packet (the transport's MSS attribute; 0 = its "
                  "default)",
                  mssBytes);
    cmd.AddValue ("seed", "ns-3 RNG seed and ECMP hash salt", seed);
    cmd.AddValue ("stopTimeNs", "trace time to stop at; -1 = last start + drainNs", stopTimeNs);
    cmd.AddValue ("drainNs", "simulated time after the last start (when stopTimeNs = -1)", drainNs);
    cmd.AddValue ("scheduler",
                  "ns-3 event scheduler TypeId (ns3::FourAryHeapScheduler, ns3::HeapScheduler, "
                  "ns3::CalendarScheduler, ns3::MapScheduler, ns3::PriorityQueueScheduler, "
                  "ns3::ListScheduler)",
                  scheduler);
    cmd.AddValue ("cxlTier",
                  "serve intra-rack accesses from a per-rack CXL pool, inter-rack ones via the "
                  "racks' daemons over --protocol (ns3::CxlRackTier::Enabled)",
                  cxlTier);
    cmd.Parse (argc, argv);
    TypeId schedulerTid;
    if (!TypeId::LookupByNameFailSafe (scheduler, &schedulerTid) ||
        !schedulerTid.IsChildOf (TypeId::LookupByName ("ns3::Scheduler")))
    {
        std::cerr << "disaggsim-ns3: --scheduler: expected an ns3::Scheduler TypeId, got '"
                  << scheduler << "'\n";
        return 2;
    }
    GlobalValue::Bind ("SchedulerType", StringValue (scheduler));

    if (flowsPath.empty () || outPath.empty () || statsPath.empty ())
    {
        std::cerr << "disaggsim-ns3: --flows, --out and --stats are required\n";
        return 2;
    }
    if (!(accessRateGbps > 0) || switchDelayNs < 0 || propNsPerM < 0 || drainNs < 0)
    {
        std::cerr << "disaggsim-ns3: --accessRateGbps must be > 0; --switchDelayNs, "
                     "--propNsPerM, --drainNs must be >= 0\n";
        return 2;
    }
    Config::SetDefault (
        "ns3::ClosTopology::AccessRate",
        DataRateValue (DataRate (static_cast<uint64_t> (std::llround (accessRateGbps * 1e9)))));
    Config::SetDefault ("ns3::ClosTopology::SwitchingDelay",
                        TimeValue (PicoSeconds (std::llround (switchDelayNs * 1000))));
    Config::SetDefault ("ns3::ClosTopology::PropagationPerM",
                        TimeValue (PicoSeconds (std::llround (propNsPerM * 1000))));
    Config::SetDefault ("ns3::ClosTopology::EcmpSalt", UintegerValue (seed));
    // A transport without an MSS attribute (flow-transport.h) has a fixed MSS: --mssBytes is
    // then accepted only if it names that MSS (the campaign runner always passes it).
    if (mssBytes != 0 && !entry->mssAttribute.empty ())
    {
        Config::SetDefault (entry->mssAttribute, UintegerValue (mssBytes));
    }
    RngSeedManager::SetSeed (seed);

    // Topology, transport.
    Ptr<FlowTransport> transport = entry->create ();
    // --cxlTier is the shorthand of ns3::CxlRackTier::Enabled (a campaign sets the attribute).
    if (cxlTier)
    {
        Config::SetDefault ("ns3::CxlRackTier::Enabled", BooleanValue (true));
    }
    Ptr<CxlRackTier> tier = CreateObject<CxlRackTier> ();
    cxlTier = tier->IsEnabled ();
    if (cxlTier)
    {
        tier->SetInnerTransport (transport);
        transport = tier;
    }
    else
    {
        tier = nullptr;
    }
    Ptr<ClosTopology> topology = ClosHelper ().Install (transport);
    if (mssBytes != 0 && entry->mssAttribute.empty () && transport->GetMssBytes () != mssBytes)
    {
        std::cerr << "disaggsim-ns3: --mssBytes=" << mssBytes << ": transport '" << protocol
                  << "' has no MSS attribute; its MSS is " << transport->GetMssBytes ()
                  << " bytes\n";
        return 2;
    }

    // Flows.
    std::vector<FlowSpec> flows;
    try
    {
        flows = disaggsim::ReadSimFlowsCsv (flowsPath, topology->GetNHosts ());
    }
    catch (const disaggsim::InputError& error)
    {
        std::cerr << "disaggsim-ns3: " << error.what () << "\n";
        return 2;
    }
    FinishRecorder recorder;
    recorder.finish.resize (flows.size ());
    recorder.finished.resize (flows.size (), false);
    int64_t lastStartNs = 0;
    for (std::size_t i = 0; i < flows.size (); ++i)
    {
        recorder.indexOfFlow[flows[i].flowId] = i;
        lastStartNs = std::max (lastStartNs, flows[i].startNs);
        try
        {
            transport->AddFlow (flows[i]);
        }
        catch (const std::invalid_argument& error)
        {
            std::cerr << "disaggsim-ns3: " << flowsPath << ": " << error.what () << "\n";
            return 2;
        }
    }
    // Asked after every flow is known: a transport may size a warm-up phase from the flows
    // (TCP opens every connection before trace time 0, transports/tcp/doc/tcp.md).
    const Time origin = transport->GetTraceOrigin ();
    transport->TraceConnectWithoutContext ("FlowFinished",
                                           MakeCallback (&FinishRecorder::OnFinished, &recorder));
    if (stopTimeNs < 0)
    {
        stopTimeNs = lastStartNs + drainNs;
    }
    Simulator::Stop (origin + NanoSeconds (stopTimeNs) - Simulator::Now ());
    if (!flows.empty ())
    {
        Simulator::Run ();
    }
    if (topology->GetPfcMonitor () && topology->GetPfcMonitor ()->IsDeadlocked ())
    {
        std::cerr << "disaggsim-ns3: the lossless fabric deadlocked (PFC); waiting ports:\n"
                  << topology->GetPfcMonitor ()->GetDeadlockReport ();
        return 3;
    }

    // FCT records.
    const uint32_t headerBytes = transport->GetPerPacketHeaderBytes ();
    const uint32_t mss = transport->GetMssBytes ();
    std::vector<disaggsim::FctRecord> records (flows.size ());
    for (std::size_t i = 0; i < flows.size (); ++i)
    {
        disaggsim::FctRecord& r = records[i];
        r.flow = flows[i];
        Time ideal =
            tier ? tier->LoneAccessTime (r.flow)
                 : topology->IdealFct (r.flow.srcHost, r.flow.dstHost, r.flow.sizeBytes,
                                       headerBytes, mss);
        r.idealFctNs = (ideal.GetPicoSeconds () + 500) / 1000;
        if (recorder.finished[i])
        {
            int64_t finishPs = (recorder.finish[i] - origin).GetPicoSeconds ();
            r.finished = true;
            r.finishNs = (finishPs + 500) / 1000;
            r.fctNs = r.finishNs - r.flow.startNs;
            r.slowdown = static_cast<double> (finishPs - r.flow.startNs * 1000) /
                         static_cast<double> (ideal.GetPicoSeconds ());
        }
    }

    disaggsim::RunStats stats;
    stats.simTimeNs = (Simulator::Now ().GetPicoSeconds () + 500) / 1000;
    stats.events = Simulator::GetEventCount ();
    stats.flows = flows.size ();
    stats.flowsFinished = recorder.nFinished;
    disaggsim::CollectFabricStats (topology, stats);

    std::vector<std::pair<std::string, std::string>> options = {
        {"protocol", protocol},
        {"flows", flowsPath},
        {"out", outPath},
        {"stats", statsPath},
        {"seed", std::to_string (seed)},
        {"stop_time_ns", std::to_string (stopTimeNs)},
        {"trace_origin_ns", std::to_string (origin.GetNanoSeconds ())},
        {"time_resolution", "ps"},
        {"scheduler", scheduler},
        {"cxl_tier", cxlTier ? "true" : "false"},
        {"checksums", "off"},
    };
    std::vector<TypeId> types = {ClosTopology::GetTypeId ()};
    for (const TypeId& tid : transport->GetConfigTypeIds ())
    {
        types.push_back (tid);
    }
    const auto attributes = disaggsim::ResolvedAttributes (types);
    const auto transportStats = transport->GetStatistics ();
    const auto derived = transport->GetDerivedConfig ();

    stats.peakRssKb = disaggsim::PeakRssKb ();
    stats.wallSeconds =
        std::chrono::duration<double> (std::chrono::steady_clock::now () - wallStart).count ();
    disaggsim::WriteFctCsv (outPath, records);
    disaggsim::WriteFileAtomically (
        statsPath, disaggsim::StatsJson (stats, transportStats, options, derived, attributes));
    Simulator::Destroy ();
    return 0;
}

} // namespace

int
main (int argc, char** argv)
{
    try
    {
        return Run (argc, argv);
    }
    catch (const std::exception& error)
    {
        std::cerr << "disaggsim-ns3: " << error.what () << "\n";
        return 1;
    }
}
