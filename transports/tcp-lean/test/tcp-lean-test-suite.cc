/*
 * disaggsim: tests of the lean TCP / DCTCP (transports/tcp-lean).  Every expected value is
 * derived by hand in the comment next to it, from three times of the paper's Clos
 * (topologies/doc/clos.md; transports/tcp/doc/tcp.md "K" gives the same terms):
 *   T = one 1518 B data frame on an access link: 303.6 ns at 40 Gbps, 121.44 ns at 100 Gbps;
 *   D = one full data packet host 0 -> host 16 (inter-rack) alone: 1691.3 ns / 1372.52 ns;
 *   A = one 58 B ACK back: 1180.3 ns / 1168.12 ns;  RTT = D + A: 2871.6 ns / 2540.64 ns.
 * n back-to-back segments from an idle NIC: segment i's last bit reaches host 16 at D + i T.
 */
#include "topologies/model/drop-tail-ecn-queue.h"
#include "topologies/model/fabric-header.h"
#include "topologies/model/fabric-net-device.h"
#include "transports/tcp-lean/helper/tcp-lean-helper.h"
#include "transports/tcp-lean/model/tcp-lean-header.h"

#include "ns3/core-module.h"
#include "ns3/test.h"

#include <functional>
#include <map>
#include <set>

using namespace ns3;

// Anonymous: the other suites have test classes of the same names.
namespace
{

constexpr uint32_t kMss = 1460;
constexpr uint32_t kDst = 16; // host 0 of rack 1: host 0 -> 16 crosses ToR, spine, ToR

/// A drop-tail port that drops once, or CE-marks, data frames of given byte offsets (test
/// instrument; every other rule is DropTailEcnQueue's).
class OffsetQueue : public DropTailEcnQueue
{
  public:
    static TypeId GetTypeId ()
    {
        static TypeId tid = TypeId ("ns3::TcpLeanTestOffsetQueue")
                                .SetParent<DropTailEcnQueue> ()
                                .AddConstructor<OffsetQueue> ();
        return tid;
    }

    static std::set<uint32_t> s_dropOnce; ///< offsets to drop the first time they pass
    static std::set<uint32_t> s_mark;     ///< offsets to CE-mark every time
    static uint32_t s_dropped;

  protected:
    bool DoEnqueue (FabricQueueItem&& item) override
    {
        if (item.header.transportFlags & TCP_LEAN_DATA)
        {
            if (s_dropOnce.erase (item.header.seq) > 0)
            {
                ++s_dropped;
                return false;
            }
            if (s_mark.count (item.header.seq) > 0 && item.header.IsEct ())
            {
                item.header.ecn = FabricEcn::CE;
            }
        }
        return DropTailEcnQueue::DoEnqueue (std::move (item));
    }
};

std::set<uint32_t> OffsetQueue::s_dropOnce;
std::set<uint32_t> OffsetQueue::s_mark;
uint32_t OffsetQueue::s_dropped = 0;
NS_OBJECT_ENSURE_REGISTERED (OffsetQueue);

/// The paper's Clos (ClosTopology defaults) at \p rate with \p protocol, optionally with
/// OffsetQueue switch ports; records FlowFinished times.
struct LeanFabric
{
    Ptr<ClosTopology> topology;
    Ptr<TcpLeanFlowTransport> transport;
    std::map<uint64_t, Time> finish;

    LeanFabric (const std::string& protocol, const std::string& rate, bool offsetQueue,
                const std::function<void ()>& overrides = {})
    {
        Config::Reset ();
        FlowTransportRegistry::Find (protocol)->setDefaults ();
        if (overrides)
        {
            overrides ();
        }
        topology = CreateObject<ClosTopology> ();
        topology->SetAttribute ("AccessRate", DataRateValue (DataRate (rate)));
        transport = CreateObject<TcpLeanFlowTransport> ();
        transport->ConfigureFabric (topology);
        if (offsetQueue)
        {
            ObjectFactory factory;
            factory.SetTypeId (OffsetQueue::GetTypeId ());
            factory.Set ("MarkThresholdBytes", UintegerValue (0));
            topology->SetSwitchQueue (factory);
        }
        topology->Build ();
        transport->Install (topology);
        transport->TraceConnectWithoutContext ("FlowFinished",
                                               MakeCallback (&LeanFabric::OnFinished, this));
    }

    void OnFinished (uint64_t flowId, Time at)
    {
        finish[flowId] = at;
    }

    /// FCT of a flow started at time 0 (trace time = simulation time).
    Time Run (uint64_t bytes)
    {
        transport->AddFlow (FlowSpec{1, 0, 0, kDst, bytes});
        Simulator::Run ();
        return finish.count (1) ? finish[1] : Seconds (-1);
    }

    Time D () const
    {
        return topology->IdealFct (0, kDst, kMss, kTcpLeanHeaderBytes, kMss);
    }

    Time Rtt () const
    {
        return topology->BaseRtt (kTcpLeanHeaderBytes, kMss);
    }
};

/// \returns whether the Clos gives the T, D and A of the file comment (the derivations
/// below rest on them).
bool
HasTimes (const LeanFabric& fabric, Time t, Time d, Time a)
{
    const Time ideal2 = fabric.topology->IdealFct (0, kDst, 2 * kMss, kTcpLeanHeaderBytes, kMss);
    return ideal2 - fabric.D () == t && fabric.D () == d && fabric.Rtt () - fabric.D () == a;
}


/**
 * A lone flow: the connection is open (no handshake in the FCT, as with tcp-ns3), 10
 * segments leave at once, the receiver ACKs the first segment at once and then every
 * second one, each ACK adds one MSS in slow start (NewReno).
 *
 * 40 Gbps: the first ACK is back at RTT = 2871.6 ns, before the initial window has left the
 * NIC (10 T = 3036 ns), and every later pair of segments' ACK adds 1.5 segments; the NIC
 * never idles, so a flow of n full segments ends at D + (n - 1) T, its ideal FCT: 100
 * segments: 1691.3 + 99 x 303.6 = 31747.7 ns.
 *
 * 100 Gbps: the window leaves in 10 T = 1214.4 ns < RTT = 2540.64 ns, so the NIC idles until
 * the first ACK.  ACK(0) at RTT: cwnd 11, segments 1-9 out: 10 and 11 leave at RTT, RTT + T.
 * ACK(1,2) at RTT + 2T: cwnd 12, 3-11 out: 12, 13, 14 (RTT + 2T ... 4T).  ACK(3,4) at
 * RTT + 4T: 15-17 (RTT + 5T ... 7T).  ACK(5,6) at RTT + 6T: 18-20 (RTT + 8T ... 10T).
 * ACK(7,8) at RTT + 8T: 21-23 (RTT + 11T ... 13T).  Segment 9 is alone: its ACK waits for
 * the 1 us delayed-ACK timer (segment 10 arrives only at RTT + D), leaves at D + 9T + 1 us and
 * is back at RTT + 9T + 1 us: cwnd 16, 10-23 out: 24, 25 leave at RTT + 9T + 1 us (+ T).
 * - 14 segments end with segment 13: RTT + 3T + D = 2540.64 + 364.32 + 1372.52 = 4277.48 ns;
 * - 26 segments end with segment 25: RTT + 10T + 1 us + D = 2540.64 + 1214.4 + 1000 +
 *   1372.52 = 6127.56 ns.
 */
class LoneFlowTestCase : public TestCase
{
  public:
    LoneFlowTestCase (std::string protocol, std::string rate, uint32_t segments, int64_t expectedPs)
          : TestCase (protocol + ": a lone flow of " + std::to_string (segments) +
                      " segments at " + rate + " ends at the hand-derived FCT")
          , m_protocol (std::move (protocol))
          , m_rate (std::move (rate))
          , m_segments (segments)
          , m_expectedPs (expectedPs)
    {
    }

  private:
    void DoRun () override
    {
        {
            LeanFabric fabric (m_protocol, m_rate, false);
            const bool times =
                m_rate == "40Gbps"
                    ? HasTimes (fabric, PicoSeconds (303600), PicoSeconds (1691300),
                                PicoSeconds (1180300))
                    : HasTimes (fabric, PicoSeconds (121440), PicoSeconds (1372520),
                                PicoSeconds (1168120));
            NS_TEST_ASSERT_MSG_EQ (times, true, "T, D, A of the file comment");
            const Time fct = fabric.Run (uint64_t (m_segments) * kMss);
            NS_TEST_ASSERT_MSG_EQ (fct, PicoSeconds (m_expectedPs), "FCT");
        }
        Simulator::Destroy ();
    }

    std::string m_protocol;
    std::string m_rate;
    uint32_t m_segments;
    int64_t m_expectedPs; ///< a Time is only made in DoRun, once the resolution is set
};

/**
 * One loss, repaired by fast retransmit (RFC 6675).  10 segments (one initial window) at 40
 * Gbps, segment 5 dropped once at the first switch.  Segments 6, 7, 8 arrive out of order
 * and each is ACKed at once with its SACK block; the third (segment 8's, sent at D + 8T)
 * makes 5 IsLost (3 segments SACKed above it) and reaches the sender at D + 8T + A'; the
 * sender retransmits 5 at once (its NIC has been idle since 10 T = 3036 ns), which arrives D
 * later and completes the flow: FCT = D + 8T + A' + D.  A' is the one-way time of an ACK
 * with one SACK block (12 B of options: 2 + 8 B padded to 4, RFC 2018 §3), a 70 B frame:
 * A + 12 B x 8 x (1 / 40 Gbps + 3 hops / 160 Gbps) = 1180.3 + 2.4 + 1.8 = 1184.5 ns.  FCT =
 * 1691.3 + 2428.8 + 1184.5 + 1691.3 = 6995.9 ns: exactly one RTT (of a SACK-carrying ACK)
 * after segment 8 arrived (without the loss: D + 9T = 4423.7 ns).  No timeout.
 */
class FastRetransmitTestCase : public TestCase
{
  public:
    explicit FastRetransmitTestCase (std::string protocol)
          : TestCase (protocol + ": one loss costs exactly one RTT (fast retransmit, SACK)")
          , m_protocol (std::move (protocol))
    {
    }

  private:
    void DoRun () override
    {
        {
            OffsetQueue::s_dropOnce = {5 * kMss};
            OffsetQueue::s_mark.clear ();
            OffsetQueue::s_dropped = 0;
            LeanFabric fabric (m_protocol, "40Gbps", true);
            const Time sackAck = fabric.topology->IdealFct (kDst, 0, 12, kTcpLeanHeaderBytes, kMss);
            NS_TEST_ASSERT_MSG_EQ (sackAck, PicoSeconds (1184500), "A' of a 70 B ACK");
            const Time fct = fabric.Run (10 * kMss);
            NS_TEST_ASSERT_MSG_EQ (OffsetQueue::s_dropped, 1, "one frame dropped");
            NS_TEST_ASSERT_MSG_EQ (fct, PicoSeconds (6995900), "FCT = arrival of 8 + RTT");
            auto stats = fabric.transport->GetStatistics ();
            NS_TEST_ASSERT_MSG_EQ (stats[0].second, "0", "no timeout");
            NS_TEST_ASSERT_MSG_EQ (stats[1].second, "1", "one fast retransmit");
        }
        Simulator::Destroy ();
    }

    std::string m_protocol;
};

/// A 10-segment flow at 40 Gbps whose segment \p dropped is lost once and resent by the
/// timer: checks one drop, one timeout, no fast retransmit and the FCT.
class OneTimeoutTestCase : public TestCase
{
  protected:
    using TestCase::TestCase;

    void CheckOneTimeout (uint32_t dropped, const std::function<void ()>& overrides,
                          Time expectedFct)
    {
        {
            OffsetQueue::s_dropOnce = {dropped * kMss};
            OffsetQueue::s_mark.clear ();
            OffsetQueue::s_dropped = 0;
            LeanFabric fabric ("tcp", "40Gbps", true, overrides);
            const Time fct = fabric.Run (10 * kMss);
            NS_TEST_ASSERT_MSG_EQ (OffsetQueue::s_dropped, 1, "one frame dropped");
            NS_TEST_ASSERT_MSG_EQ (fct, expectedFct, "FCT");
            auto stats = fabric.transport->GetStatistics ();
            NS_TEST_ASSERT_MSG_EQ (stats[0].second, "1", "one timeout");
            NS_TEST_ASSERT_MSG_EQ (stats[1].second, "0", "no fast retransmit");
        }
        Simulator::Destroy ();
    }
};

/**
 * The retransmission timer (RFC 6298).  10 segments at 40 Gbps, the last (9) dropped once:
 * no later segment, so no duplicate ACK.  The last ACK that advances, ACK(7,8), leaves at D +
 * 8T and restarts the timer at D + 8T + A = RTT + 8T.  The RTT samples are ~2.9-5.3 us, so
 * SRTT + max(G, 4 RTTVAR) < 30 us and RTO = MinRto.  The retransmission leaves at RTT + 8T +
 * MinRto and arrives D later: FCT = 2871.6 + 2428.8 + MinRto + 1691.3 ns = 6991.7 ns +
 * MinRto: 206991.7 ns with the default 200 us, 106991.7 ns with MinRto = 100 us.
 */
class RtoTestCase : public OneTimeoutTestCase
{
  public:
    explicit RtoTestCase (int64_t minRtoUs)
          : OneTimeoutTestCase ("tcp: a lost tail is resent after exactly MinRto = " +
                                std::to_string (minRtoUs) + " us")
          , m_minRtoUs (minRtoUs)
    {
    }

  private:
    void DoRun () override
    {
        const Time minRto = MicroSeconds (m_minRtoUs);
        CheckOneTimeout (
            9,
            [minRto] () {
                Config::SetDefault ("ns3::TcpLeanFlowTransport::MinRto", TimeValue (minRto));
            },
            PicoSeconds (6991700) + minRto);
    }

    int64_t m_minRtoUs;
};

/**
 * The timer in ns-3's Disorder state (Ns3Disorder, doc §6).  10 segments at 40 Gbps, segment 8
 * dropped once.  The receiver ACKs 0 at once, then every second segment: ACK(7) (segments 5,
 * 6) leaves at D + 6T; segment 7 waits for its delayed ACK (1 us), but segment 9 arrives
 * first, at D + 9T, out of order: ACK(8) with a SACK of 9 leaves at once, a 70 B frame (58 B +
 * 12 B SACK option), which takes 12 B x 8 / 40 Gbps x (1 + 3/4) = 4.2 ns longer than A (one
 * access-link serialization plus the re-serialization after the 4x uplink).  One SACKed
 * segment: no fast retransmit, so segment 8 is resent by the timer, RTO = MinRto (samples
 * ~3-5 us), and arrives D later, which completes the flow.
 * - ns-3 (default): ACK(8) advances SND.UNA but carries new SACK information, so the socket
 *   stays in Disorder and the timer keeps its restart at ACK(7), RTT + 6T: FCT = 2871.6 +
 *   1821.6 + MinRto + 1691.3 = 6384.5 ns + MinRto.
 * - RFC 6298 §5.3 (Ns3Disorder = false): restarted at ACK(8), D + 9T + A + 4.2: FCT =
 *   1691.3 + 2732.4 + 1184.5 + MinRto + 1691.3 = 7299.5 ns + MinRto.
 */
class DisorderTimerTestCase : public OneTimeoutTestCase
{
  public:
    explicit DisorderTimerTestCase (bool ns3Disorder)
          : OneTimeoutTestCase (std::string ("tcp: an ACK with new SACK information ") +
                                (ns3Disorder ? "leaves the timer running (ns-3's Disorder)"
                                             : "restarts the timer (RFC 6298)"))
          , m_ns3Disorder (ns3Disorder)
    {
    }

  private:
    void DoRun () override
    {
        const bool ns3Disorder = m_ns3Disorder;
        CheckOneTimeout (
            8,
            [ns3Disorder] () {
                Config::SetDefault ("ns3::TcpLeanFlowTransport::Ns3Disorder",
                                    BooleanValue (ns3Disorder));
            },
            MicroSeconds (200) + PicoSeconds (ns3Disorder ? 6384500 : 7299500));
    }

    bool m_ns3Disorder;
};

/**
 * DCTCP's reaction to one marked window (RFC 8257 §3.3), with DctcpAlphaOnInit = 0.5 and
 * g = 1/16.  10 segments at 40 Gbps; the switch CE-marks segments 0 and 1 of the first
 * window.  The receiver ACKs 0 at once (ECE), sends the pending ACK of 1 with ECE when 2
 * arrives unmarked (the CE state changes, RFC 8257 §3.2), then ACK(2,3), (4,5), (6,7), (8,9)
 * without ECE.
 * - The first ECE (ACK(0), at RTT) cuts once: ssthresh = 14600 x (1 - 0.5 / 2) = 10950 B; no
 *   further cut in that window (CWR until SND.UNA passes segment 10).  RFC 8257 mode: cwnd =
 *   ssthresh at once.  ns-3 mode (the default), PRR with RecoverFS = 9 segments = 13140 B:
 *   ACK(0) (counted twice, as ns-3) sndcnt = ceil(2920 x 10950 / 13140) = 2434, 1 segment out;
 *   ACK(1) 3650 - 1460 = 2190, 1 out; ACK(2,3) 6084 - 2920 = 3164, 2 out; ACK(4,5) 8517 - 5840
 *   = 2677, 1 out; ACK(6,7): pipe = 2 + 5 segments = 10220 <= ssthresh, so cwnd = pipe +
 *   min(..., 10950 - pipe) = 10950, and again at ACK(8,9): cwnd = 10950 B in both modes.
 * - The observation window ends when SND.UNA reaches 10 (what was sent at the first ACK),
 *   at ACK(8,9) = RTT + 9T = 5604 ns: 2920 of 14600 bytes were acknowledged with ECE, so
 *   alpha = (1 - 1/16) x 0.5 + (1/16) x 0.2 = 0.48125.
 * Read at 6000 ns (the next ACK, ACK(10,11), is back only at 7261.2 ns).
 */
class DctcpWindowTestCase : public TestCase
{
  public:
    DctcpWindowTestCase ()
          : TestCase ("dctcp: after a window with 2 of 10 segments marked, cwnd = "
                      "IW x (1 - alpha0 : 2) and alpha = (1 - g) alpha0 + g F")
    {
    }

  private:
    void DoRun () override
    {
        {
            OffsetQueue::s_dropOnce.clear ();
            OffsetQueue::s_mark = {0, kMss};
            LeanFabric fabric ("dctcp", "40Gbps", true, [] () {
                Config::SetDefault ("ns3::TcpLeanFlowTransport::DctcpAlphaOnInit",
                                    DoubleValue (0.5));
            });
            uint32_t cwnd = 0;
            uint32_t ssthresh = 0;
            double alpha = -1;
            uint64_t cuts = 0;
            Simulator::Schedule (NanoSeconds (6000), [&] () {
                Ptr<TcpLeanSender> sender = fabric.transport->GetSender (1);
                cwnd = sender->GetCwndBytes ();
                ssthresh = sender->GetSsthreshBytes ();
                alpha = sender->GetAlpha ();
                cuts = sender->GetEcnCuts ();
            });
            const Time fct = fabric.Run (60 * kMss);
            NS_TEST_ASSERT_MSG_EQ (fct.IsPositive (), true, "the flow finishes");
            NS_TEST_ASSERT_MSG_EQ (cwnd, 10950, "cwnd = 14600 (1 - 0.5 / 2)");
            NS_TEST_ASSERT_MSG_EQ (ssthresh, 10950, "ssthresh = cwnd");
            NS_TEST_ASSERT_MSG_EQ (cuts, 1, "one cut per window");
            NS_TEST_ASSERT_MSG_EQ_TOL (alpha, 0.48125, 1e-12, "alpha");
        }
        Simulator::Destroy ();
    }
};

/**
 * DCTCP's ECE after a timeout, as ns-3.37 (Ns3DctcpEce, the default) and as RFC 8257 / Linux.
 * 12 segments at 40 Gbps, alpha = 1 (DctcpAlphaOnInit); segments 9, 10, 11 (the last window's
 * tail) are dropped once, so no duplicate ACK comes and the timer fires (RtoTestCase); cwnd =
 * 1 MSS and segment 9 is resent, CE-marked.  Its ACK (ECE; the receiver's delayed-ACK timer)
 * is back at some t_a, the same in both runs, and acknowledges a retransmission (no RTT sample,
 * RTO = MinRto); 10 and 11 are lost (pipe = 0).
 * - RFC 8257 / Linux (Ns3DctcpEce = false): CWR is entered from the Open state only, so the
 *   ACK grows cwnd in slow start to 2 MSS (ssthresh = max(3 MSS / 2, 2 MSS)): 10 and 11 leave
 *   at t_a, t_a + T; FCT = t_a + T + D.
 * - ns-3: the ECE enters CWR from the loss state: ssthresh = 1460 (1 - 1/2) = 730 B, RecoverFS
 *   = 2920 B, PRR (RFC 6937) twice on that ACK: prr_delivered = 2920, pipe 0 <= ssthresh,
 *   sndcnt = min(2920 + 1460, 730 - 0) = 730, raised to 1 MSS as nothing was sent yet: 10
 *   leaves at t_a.  Its ACK (delayed-ACK timer, 1 us) is back at t_a + RTT + 1 us: sndcnt =
 *   min(..., 730) = 730, prr_out > 0, so cwnd = 730 B < 1 MSS and 11 waits for the timer,
 *   restarted by that ACK: it leaves at t_a + RTT + 1 us + MinRto; FCT = that + D.
 * The difference is MinRto + RTT + 1 us - T = 200000 + 2871.6 + 1000 - 303.6 = 203568 ns,
 * with two timeouts instead of one.
 */
class DctcpEceAfterRtoTestCase : public TestCase
{
  public:
    DctcpEceAfterRtoTestCase ()
          : TestCase ("dctcp: an ECE after a timeout enters CWR as ns-3.37 does: ssthresh "
                      "= half a segment, and the tail waits one more RTO")
    {
    }

  private:
    struct Outcome
    {
        Time fct;
        std::string timeouts;
    };

    static Outcome RunOnce (bool ns3DctcpEce)
    {
        OffsetQueue::s_dropOnce = {9 * kMss, 10 * kMss, 11 * kMss};
        OffsetQueue::s_mark = {9 * kMss};
        OffsetQueue::s_dropped = 0;
        LeanFabric fabric ("dctcp", "40Gbps", true, [ns3DctcpEce] () {
            Config::SetDefault ("ns3::TcpLeanFlowTransport::Ns3DctcpEce",
                                BooleanValue (ns3DctcpEce));
        });
        Outcome outcome;
        outcome.fct = fabric.Run (12 * kMss);
        outcome.timeouts = fabric.transport->GetStatistics ()[0].second;
        Simulator::Destroy ();
        return outcome;
    }

    void DoRun () override
    {
        const Outcome ns3 = RunOnce (true);
        const Outcome rfc = RunOnce (false);
        NS_TEST_ASSERT_MSG_EQ (ns3.fct.IsPositive () && rfc.fct.IsPositive (), true,
                               "both finish");
        NS_TEST_ASSERT_MSG_EQ (ns3.timeouts, "2", "ns-3: a second timeout");
        NS_TEST_ASSERT_MSG_EQ (rfc.timeouts, "1", "RFC 8257: one timeout");
        NS_TEST_ASSERT_MSG_EQ (ns3.fct - rfc.fct, PicoSeconds (203568000),
                               "MinRto + RTT + 1 us - T");
    }
};

/**
 * The ports are tcp-ns3's: drop-tail, CE above K for DCTCP with K from the topology
 * (transports/tcp/doc/tcp.md "K": 2 packets = 3036 B at 40 Gbps, 3 = 4554 B at 100 Gbps), no
 * marking for NewReno.
 */
class PortsTestCase : public TestCase
{
  public:
    PortsTestCase ()
          : TestCase ("tcp and dctcp: drop-tail ports, DCTCP K as tcp-ns3's")
    {
    }

  private:
    void DoRun () override
    {
        for (auto [protocol, rate, k] : {std::tuple<std::string, std::string, uint32_t>{
                                             "dctcp", "40Gbps", 3036},
                                         {"dctcp", "100Gbps", 4554},
                                         {"tcp", "40Gbps", 0}})
        {
            {
                LeanFabric fabric (protocol, rate, false);
                NS_TEST_ASSERT_MSG_EQ (fabric.transport->GetMarkThresholdBytes (), k, "K");
            }
            Simulator::Destroy ();
        }
    }
};

class TcpLeanTestSuite : public TestSuite
{
  public:
    TcpLeanTestSuite ()
          : TestSuite ("disaggsim-tcp-lean", UNIT)
    {
        for (const std::string protocol : {"tcp", "dctcp"})
        {
            AddTestCase (new LoneFlowTestCase (protocol, "40Gbps", 100, 31747700),
                         TestCase::QUICK);
            AddTestCase (new LoneFlowTestCase (protocol, "100Gbps", 14, 4277480),
                         TestCase::QUICK);
            AddTestCase (new FastRetransmitTestCase (protocol), TestCase::QUICK);
        }
        // NewReno only: DCTCP's Linux Reno growth adds 2 MSS per ACK of two segments.
        AddTestCase (new LoneFlowTestCase ("tcp", "100Gbps", 26, 6127560),
                     TestCase::QUICK);
        AddTestCase (new RtoTestCase (200), TestCase::QUICK);
        AddTestCase (new RtoTestCase (100), TestCase::QUICK);
        AddTestCase (new DisorderTimerTestCase (true), TestCase::QUICK);
        AddTestCase (new DisorderTimerTestCase (false), TestCase::QUICK);
        AddTestCase (new DctcpWindowTestCase (), TestCase::QUICK);
        AddTestCase (new DctcpEceAfterRtoTestCase (), TestCase::QUICK);
        AddTestCase (new PortsTestCase (), TestCase::QUICK);
    }
};

TcpLeanTestSuite g_tcpLeanTestSuite;

} // namespace
