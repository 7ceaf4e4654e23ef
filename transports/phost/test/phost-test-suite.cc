/*
 * disaggsim: pHost tests with exact expected values where derivable
 * (transports/phost/doc/phost.md).
 *
 * Fabric: ClosTopology with 2 racks x 4 hosts, 2 spines (4x uplinks), 40 Gbps access links,
 * 36864 B switch ports, the paper's cables and switching delay.  A full data packet is
 * 1460 + 22 + 18 = 1500 B on the wire: T = 300 ns at 40 Gbps.
 */
#include "transports/phost/helper/phost-helper.h"
#include "transports/phost/model/phost-header.h"
#include "topologies/model/strict-priority-queue.h"

#include "ns3/boolean.h"
#include "ns3/data-rate.h"
#include "ns3/simulator.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

constexpr uint32_t kMss = 1460;

/// A pHost port that drops, once, data packet DropPacket of flow DropFlow (test instrument
/// for loss recovery; every other rule is StrictPriorityQueue's).
class DropOnceQueue : public StrictPriorityQueue
{
  public:
    static TypeId GetTypeId ()
    {
        static TypeId tid = TypeId ("ns3::PhostTestDropOnceQueue")
                                .SetParent<StrictPriorityQueue> ()
                                .AddConstructor<DropOnceQueue> ();
        return tid;
    }

    static uint64_t s_flow;
    static uint32_t s_packet;
    static uint32_t s_dropped;

  protected:
    bool PassesLoneFrame () const override
    {
        return false; // every frame must reach DoEnqueue, which may drop it
    }

    bool DoEnqueue (FabricQueueItem&& item) override
    {
        if (s_dropped == 0 && item.header.payloadBytes > 0)
        {
            PhostHeader header;
            item.packet->PeekHeader (header);
            if (header.flowId == s_flow && header.packet == s_packet)
            {
                ++s_dropped;
                return false;
            }
        }
        return StrictPriorityQueue::DoEnqueue (std::move (item));
    }
};

uint64_t DropOnceQueue::s_flow = 0;
uint32_t DropOnceQueue::s_packet = 0;
uint32_t DropOnceQueue::s_dropped = 0;
NS_OBJECT_ENSURE_REGISTERED (DropOnceQueue);

struct Token
{
    Time at;
    uint16_t dst;
    uint64_t flowId;
    uint32_t packet;
};

/// The small fabric with pHost on it; records finishes, tokens and downgrades.
struct Fabric
{
    Ptr<ClosTopology> topology;
    Ptr<PhostFlowTransport> transport;
    std::map<uint64_t, Time> finish;
    std::vector<Token> tokens;
    std::vector<uint64_t> downgraded;

    explicit Fabric (const std::string& switchQueueType = "", uint32_t racks = 2,
                     bool grantAfterFirstData = true)
    {
        topology = CreateObject<ClosTopology> ();
        topology->SetAttribute ("Racks", UintegerValue (racks));
        topology->SetAttribute ("HostsPerRack", UintegerValue (4));
        topology->SetAttribute ("Spines", UintegerValue (2));
        topology->SetAttribute ("AccessRate", DataRateValue (DataRate ("40Gbps")));
        transport = CreateObject<PhostFlowTransport> ();
        transport->SetAttribute ("GrantAfterFirstData", BooleanValue (grantAfterFirstData));
        transport->ConfigureFabric (topology);
        if (!switchQueueType.empty ())
        {
            ObjectFactory factory;
            factory.SetTypeId (switchQueueType);
            topology->SetSwitchQueue (factory);
        }
        topology->Build ();
        transport->Install (topology);
        transport->TraceConnectWithoutContext ("FlowFinished",
                                               MakeCallback (&Fabric::OnFinished, this));
        for (uint32_t h = 0; h < topology->GetNHosts (); ++h)
        {
            Ptr<PhostHost> host = transport->GetHostStack (h);
            host->TraceConnectWithoutContext (
                "TokenSent", MakeBoundCallback (&Fabric::OnToken, this, static_cast<uint16_t> (h)));
            host->TraceConnectWithoutContext ("Downgraded",
                                              MakeCallback (&Fabric::OnDowngraded, this));
        }
    }

    void OnFinished (uint64_t flowId, Time at)
    {
        finish[flowId] = at;
    }

    static void OnToken (Fabric* fabric, uint16_t dst, uint64_t flowId, uint32_t packet)
    {
        fabric->tokens.push_back (Token{Simulator::Now (), dst, flowId, packet});
    }

    void OnDowngraded (uint64_t flowId)
    {
        downgraded.push_back (flowId);
    }

    void Add (uint64_t id, uint32_t src, uint32_t dst, uint64_t bytes, int64_t startNs = 0)
    {
        transport->AddFlow (FlowSpec{id, startNs, src, dst, bytes});
    }

    Time Ideal (uint32_t src, uint32_t dst, uint64_t bytes) const
    {
        return topology->IdealFct (src, dst, bytes, kPhostHeaderBytes, kMss);
    }

    std::vector<Token> TokensOf (uint64_t flowId) const
    {
        std::vector<Token> out;
        std::copy_if (tokens.begin (), tokens.end (), std::back_inserter (out),
                      [flowId] (const Token& t) { return t.flowId == flowId; });
        return out;
    }
};

class LoneFlowTest : public TestCase
{
  public:
    LoneFlowTest ()
          : TestCase ("a lone 200-packet flow has slowdown 1.0 within and across racks; its "
                      "tokens leave one per 300 ns, one per packet beyond the free ones")
    {
    }

  private:
    void DoRun () override
    {
        for (uint32_t dst : {1U, 4U})
        {
            {
                Fabric fabric;
                const PhostParams& params = fabric.transport->GetParams ();
                NS_TEST_ASSERT_MSG_EQ (params.packetTime, NanoSeconds (300),
                                       "T = 1500 B x 8 / 40 Gbps");
                const uint64_t bytes = 200ULL * kMss;
                fabric.Add (1, 0, dst, bytes, 1000);
                Simulator::Run ();
                NS_TEST_ASSERT_MSG_EQ (fabric.finish.count (1), 1, "the flow finishes");
                NS_TEST_ASSERT_MSG_EQ (fabric.finish[1] - NanoSeconds (1000),
                                       fabric.Ideal (0, dst, bytes),
                                       "FCT = IdealFct exactly (slowdown 1.0)");
                const uint32_t free = params.FreeTokens (0, dst);
                const std::vector<Token> tokens = fabric.TokensOf (1);
                NS_TEST_ASSERT_MSG_EQ (tokens.size (), 200 - free,
                                       "one token per packet beyond the free ones");
                for (std::size_t i = 0; i < tokens.size (); ++i)
                {
                    NS_TEST_ASSERT_MSG_EQ (tokens[i].packet, free + i,
                                           "tokens name packets in order");
                    if (i > 0)
                    {
                        NS_TEST_ASSERT_MSG_EQ (tokens[i].at - tokens[i - 1].at, NanoSeconds (300),
                                               "one token per MTU time of the access link");
                    }
                }
                NS_TEST_ASSERT_MSG_EQ (fabric.downgraded.size (), 0,
                                       "a lone flow is never downgraded");
            }
            Simulator::Destroy ();
        }
    }
};

/**
 * A token that reaches a source while its flow still sends free packets is spent at once
 * (earliest deadline first: a token lapses 1.5 T after its arrival, a free packet never
 * does).  Host 0 starts A (2 packets, to host 1) and B (4 packets, to host 2) at t = 0,
 * within a rack, where a flow has 3 free packets (ceil(0.868 us / T), the intra-rack BDP at
 * 40 Gbps).  A goes first (SRPT).  B's RTS leaves as a 40 B control frame behind A's first
 * packet, so host 2 grants B's packet 3 before B's free packets are through.  Derived by
 * hand from the source's pacing alone: A's packet 0 leaves at 0, the RTS at T (8 ns), A's
 * packet 1 at T + 8 ns, then B's 4 packets back to back from 2T + 8 ns, so
 *   FCT(A) = IdealFct(A) + 8 ns,   FCT(B) = 2T + 8 ns + IdealFct(B),
 * with no token lapsed and none re-issued.  Spending the free packets first let B's token
 * lapse and cost B a retransmission timeout (3 BaseRtt = 8.6 us) on top.
 * GrantAfterFirstData is off here: host 2 grants B from its lone RTS (the paper's rule).
 */
class TokenBeforeFreeTest : public TestCase
{
  public:
    TokenBeforeFreeTest ()
          : TestCase ("a token arriving while its flow sends free packets is spent at once: two "
                      "co-arriving flows of one source finish back to back, as derived by hand")
    {
    }

  private:
    void DoRun () override
    {
        {
            // Grant from the RTS, the paper's rule: with GrantAfterFirstData the token would
            // come after B's first data packet and arrive just as its free packets end.
            Fabric fabric ("", 2, false);
            const PhostParams& params = fabric.transport->GetParams ();
            NS_TEST_ASSERT_MSG_EQ (params.FreeTokens (0, 2), 3, "intra-rack BDP at 40 Gbps");
            const uint64_t bytesA = 2ULL * kMss;
            const uint64_t bytesB = 4ULL * kMss;
            fabric.Add (1, 0, 1, bytesA);
            fabric.Add (2, 0, 2, bytesB);
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (fabric.finish.size (), 2, "both finish");
            const Time rts = NanoSeconds (8); // (22 + 18) B x 8 / 40 Gbps
            const Time T = NanoSeconds (300);
            NS_TEST_ASSERT_MSG_EQ (fabric.finish[1], fabric.Ideal (0, 1, bytesA) + rts,
                                   "A: its ideal FCT, its second packet behind B's RTS");
            NS_TEST_ASSERT_MSG_EQ (fabric.finish[2], 2 * T + rts + fabric.Ideal (0, 2, bytesB),
                                   "B: right behind A, back to back");
            const std::vector<Token> tokens = fabric.TokensOf (2);
            NS_TEST_ASSERT_MSG_EQ (tokens.size (), 1,
                                   "one token, for B's packet beyond its free 3");
            NS_TEST_ASSERT_MSG_EQ (tokens.front ().packet, 3, "it names packet 3");
            NS_TEST_ASSERT_MSG_LT (tokens.front ().at, 2 * T + rts + 2 * T,
                                   "granted from B's RTS, before B's free packets are through");
            const auto stats = fabric.transport->GetStatistics ();
            for (const char* key : {"phost.tokens_expired", "phost.tokens_reissued"})
            {
                const bool zero = std::find (stats.begin (), stats.end (),
                                             std::make_pair (std::string (key),
                                                             std::string ("0"))) != stats.end ();
                NS_TEST_ASSERT_MSG_EQ (zero, true, key << " = 0");
            }
        }
        Simulator::Destroy ();
    }
};

/**
 * A destination that learns a flow from a lone RTS grants it only from its first data packet
 * (GrantAfterFirstData): its source is busy with a more urgent flow, and tokens sent at once
 * would lapse there (1.5 T) long before it turns to this flow.  Host 0 starts A (3 packets,
 * to host 1), B and C (4 packets each, to hosts 2 and 3) at t = 0, within a rack (3 free
 * packets per flow, as above).  SRPT at the source sends A, then B (tie with C: the earlier
 * flow), then C; B's and C's RTS leave as 40 B frames (8 ns each) behind A's first packet.
 * Derived by hand from the source's pacing alone:
 *   FCT(A) = IdealFct(A) + 16 ns,  FCT(B) = 3T + 16 ns + IdealFct(B),
 *   FCT(C) = 7T + 16 ns + IdealFct(C),
 * one token each for B and C (packet 3), none lapsed or re-issued.  Granting from the RTS,
 * C's token reaches host 0 while A is still sending, lapses, and C waits a retransmission
 * timeout (8.6 us) for it again: also checked, with the setting off.
 */
class GrantAfterFirstDataTest : public TestCase
{
  public:
    GrantAfterFirstDataTest ()
          : TestCase ("three co-arriving flows of one source: the flows whose RTS came alone are "
                      "granted from their first data and finish back to back, as derived by hand")
    {
    }

  private:
    void DoRun () override
    {
        for (bool after : {true, false})
        {
            {
                Fabric fabric ("", 2, after);
                const PhostParams& params = fabric.transport->GetParams ();
                NS_TEST_ASSERT_MSG_EQ (params.FreeTokens (0, 3), 3, "intra-rack BDP at 40 Gbps");
                const uint64_t bytesA = 3ULL * kMss;
                const uint64_t bytes = 4ULL * kMss;
                fabric.Add (1, 0, 1, bytesA);
                fabric.Add (2, 0, 2, bytes);
                fabric.Add (3, 0, 3, bytes);
                Simulator::Run ();
                NS_TEST_ASSERT_MSG_EQ (fabric.finish.size (), 3, "all finish");
                const Time rts2 = NanoSeconds (16); // two 40 B RTS at 40 Gbps
                const Time T = NanoSeconds (300);
                NS_TEST_ASSERT_MSG_EQ (fabric.finish[1], fabric.Ideal (0, 1, bytesA) + rts2,
                                       "A: ideal, behind the two RTS");
                NS_TEST_ASSERT_MSG_EQ (fabric.finish[2], 3 * T + rts2 + fabric.Ideal (0, 2, bytes),
                                       "B: right behind A");
                const Time c = 7 * T + rts2 + fabric.Ideal (0, 3, bytes);
                const auto stats = fabric.transport->GetStatistics ();
                const auto has = [&stats] (const char* key, const char* value)
                {
                    return std::find (stats.begin (), stats.end (),
                                      std::make_pair (std::string (key), std::string (value))) !=
                           stats.end ();
                };
                if (after)
                {
                    NS_TEST_ASSERT_MSG_EQ (fabric.finish[3], c, "C: right behind B");
                    const std::vector<Token> tokens = fabric.TokensOf (3);
                    NS_TEST_ASSERT_MSG_EQ (tokens.size (), 1, "one token for C");
                    // C's first packet leaves at 7T + 16 ns and reaches host 3 one lone-packet
                    // FCT later.
                    NS_TEST_ASSERT_MSG_GT_OR_EQ (tokens.front ().at,
                                                 7 * T + rts2 + fabric.Ideal (0, 3, kMss),
                                                 "C granted only after its first data arrived");
                    NS_TEST_ASSERT_MSG_EQ (has ("phost.tokens_expired", "0"), true, "none lapsed");
                    NS_TEST_ASSERT_MSG_EQ (has ("phost.tokens_reissued", "0"), true,
                                           "none re-issued");
                }
                else
                {
                    const std::vector<Token> tokens = fabric.TokensOf (3);
                    NS_TEST_ASSERT_MSG_EQ (tokens.size (), 2, "C's token for packet 3, twice");
                    NS_TEST_ASSERT_MSG_GT (fabric.finish[3],
                                           tokens.front ().at + params.retransmissionTimeout,
                                           "C waits for the re-issue, a timeout after its grant");
                    NS_TEST_ASSERT_MSG_GT (fabric.finish[3], c + MicroSeconds (5),
                                           "microseconds after its back-to-back finish");
                    NS_TEST_ASSERT_MSG_EQ (has ("phost.tokens_expired", "1"), true,
                                           "C's first token lapsed");
                    NS_TEST_ASSERT_MSG_EQ (has ("phost.tokens_reissued", "1"), true,
                                           "and was re-issued");
                }
            }
            Simulator::Destroy ();
        }
    }
};

class SrptGrantTest : public TestCase
{
  public:
    SrptGrantTest ()
          : TestCase ("a destination with three senders grants in SRPT order")
    {
    }

  private:
    void DoRun () override
    {
        {
            Fabric fabric;
            // Large first, small last: arrival order is the opposite of SRPT order.
            fabric.Add (30, 4, 0, 300ULL * kMss);
            fabric.Add (20, 5, 0, 200ULL * kMss);
            fabric.Add (10, 6, 0, 100ULL * kMss);
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (fabric.finish.size (), 3, "all finish");
            NS_TEST_ASSERT_MSG_LT (fabric.finish[10], fabric.finish[20], "small before medium");
            NS_TEST_ASSERT_MSG_LT (fabric.finish[20], fabric.finish[30], "medium before large");
            // Once all three are known (their RTS arrive within 3 T), tokens go to the flow
            // with the fewest packets left: flow ids never decrease after that.
            const Time known = fabric.tokens.front ().at + NanoSeconds (900);
            uint64_t last = 0;
            uint32_t ordered = 0;
            for (const Token& token : fabric.tokens)
            {
                if (token.at < known)
                {
                    continue;
                }
                NS_TEST_ASSERT_MSG_GT_OR_EQ (token.flowId, last,
                                             "SRPT grant order at " << token.at << " packet "
                                                                    << token.packet);
                last = token.flowId;
                ++ordered;
            }
            NS_TEST_ASSERT_MSG_GT (ordered, 500, "most tokens checked");
        }
        Simulator::Destroy ();
    }
};

class DowngradeTest : public TestCase
{
  public:
    DowngradeTest ()
          : TestCase ("a sender that ignores tokens is downgraded and the others proceed")
    {
    }

  private:
    void DoRun () override
    {
        {
            Fabric fabric;
            // Host 1 serves its shorter flow Y (to host 2) and ignores host 0's tokens for X;
            // host 0 prefers X (shorter than Z from host 3) until it downgrades X.
            fabric.Add (1, 1, 2, 100ULL * kMss); // Y
            fabric.Add (2, 1, 0, 200ULL * kMss); // X
            fabric.Add (3, 3, 0, 400ULL * kMss); // Z
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (fabric.finish.size (), 3, "all finish");
            const auto xDowngrades =
                std::count (fabric.downgraded.begin (), fabric.downgraded.end (), 2);
            const auto zDowngrades =
                std::count (fabric.downgraded.begin (), fabric.downgraded.end (), 3);
            NS_TEST_ASSERT_MSG_GT (xDowngrades, 0, "host 0 downgrades X");
            NS_TEST_ASSERT_MSG_EQ (zDowngrades, 0, "Z answers its tokens: never downgraded");
            // While host 1 still serves Y, host 0's tokens go to Z.  Without the downgrade X
            // (fewer packets left than Z) would take every token and Z would get none before
            // Y finishes; with it Z gets tokens for over a quarter of Y's 100 x 300 ns.
            const std::vector<Token> z = fabric.TokensOf (3);
            const auto zBeforeY = std::count_if (
                z.begin (), z.end (), [&] (const Token& t) { return t.at < fabric.finish[1]; });
            NS_TEST_ASSERT_MSG_GT (zBeforeY, 25, "Z proceeds while X's source is busy");
            NS_TEST_ASSERT_MSG_LT (fabric.finish[1], fabric.finish[2], "Y (SRPT at host 1) first");
        }
        Simulator::Destroy ();
    }
};

class LossRecoveryTest : public TestCase
{
  public:
    LossRecoveryTest ()
          : TestCase ("a lost data packet is recovered by a re-issued token")
    {
    }

  private:
    void DoRun () override
    {
        DropOnceQueue::s_flow = 1;
        DropOnceQueue::s_packet = 50;
        DropOnceQueue::s_dropped = 0;
        {
            Fabric fabric ("ns3::PhostTestDropOnceQueue");
            const uint64_t bytes = 200ULL * kMss;
            fabric.Add (1, 0, 4, bytes);
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (DropOnceQueue::s_dropped, 1, "packet 50 was dropped once");
            NS_TEST_ASSERT_MSG_EQ (fabric.finish.count (1), 1, "the flow finishes");
            const std::vector<Token> tokens = fabric.TokensOf (1);
            const auto for50 = std::count_if (tokens.begin (), tokens.end (),
                                              [] (const Token& t) { return t.packet == 50; });
            NS_TEST_ASSERT_MSG_EQ (for50, 2, "packet 50 granted twice: the token is re-issued");
            const PhostParams& params = fabric.transport->GetParams ();
            Time first;
            for (const Token& t : tokens)
            {
                if (t.packet == 50)
                {
                    first = t.at;
                    break;
                }
            }
            Time again;
            for (const Token& t : tokens)
            {
                if (t.packet == 50 && t.at > first)
                {
                    again = t.at;
                }
            }
            NS_TEST_ASSERT_MSG_GT_OR_EQ (again - first, params.retransmissionTimeout,
                                         "re-issued after the retransmission timeout");
            NS_TEST_ASSERT_MSG_LT (again - first, params.retransmissionTimeout + params.packetTime,
                                   "at the first token slot after it");
            const auto stats = fabric.transport->GetStatistics ();
            const bool oneReissued =
                std::find (stats.begin (), stats.end (),
                           std::make_pair (std::string ("phost.tokens_reissued"),
                                           std::string ("1"))) != stats.end ();
            NS_TEST_ASSERT_MSG_EQ (oneReissued, true, "exactly one token re-issued");
            NS_TEST_ASSERT_MSG_GT (fabric.finish[1], fabric.Ideal (0, 4, bytes),
                                   "the loss costs time");
        }
        Simulator::Destroy ();
    }
};

/**
 * Incast of every other host of a \p racks x 4 fabric to host 0 (each 100 packets).  After
 * the free-packet burst only tokens clock data in, and a bound on the receiver's ToR port
 * follows from the algorithm alone (transports/phost/doc/phost.md §3, "Incast bound"):
 *
 * - host 0 sends tokens at least T apart (one per data packet time);
 * - the answer to a token reaches the port d_intra or d_inter after it (a packet's and a
 *   token's path: nothing else queues on the way, each source has one flow), and
 *   d_inter - d_intra = Delta = RTT_inter - RTT_intra (ClosTopology::BaseRtt's two paths);
 * - so the answers landing in any window of length L are answers to tokens sent within
 *   L + Delta, at most (L + Delta) / T + 1 of them, while the port sends L / T packets:
 *   the queue never holds more than floor(Delta / T) + 1 packets.
 *
 * The test asserts ceil(Delta / T) + 1 data packets (one packet of slack for delays below
 * T: RTS retries of waiting flows, 8 ns each, go first on the port): 8 at 40 Gbps (Delta =
 * 2.859 - 0.868 = 1.991 us, T = 300 ns), for 7 senders (2 racks) as for 15 (4 racks): the
 * bound does not grow with the senders.  It is tighter than the in-flight window (12
 * packets), which is asserted too.
 */
class IncastTest : public TestCase
{
  public:
    explicit IncastTest (uint32_t racks)
          : TestCase ("incast of " + std::to_string (4 * racks - 1) +
                      " senders to one receiver: after the free-token burst every switch queue "
                      "stays within ceil((RTT_inter - RTT_intra) over T) + 1 = 8 packets")
          , m_racks (racks)
    {
    }

  private:
    void DoRun () override
    {
        {
            Fabric fabric ("", m_racks);
            const uint32_t senders = fabric.topology->GetNHosts () - 1;
            for (uint32_t src = 1; src <= senders; ++src)
            {
                fabric.Add (src, src, 0, 100ULL * kMss);
            }
            const PhostParams& params = fabric.transport->GetParams ();
            // The free packets of every sender are through the receiver's link after their
            // wire time plus a round trip; a retransmission timeout later, the packets the
            // burst lost are re-granted: from then on only tokens clock data in.
            uint32_t freePackets = 0;
            for (uint32_t src = 1; src <= senders; ++src)
            {
                freePackets += params.FreeTokens (src, 0);
            }
            const Time burst = params.packetTime * static_cast<int64_t> (freePackets) +
                               2 * fabric.transport->GetBaseRtt () + params.retransmissionTimeout;
            // Data frames waiting at the receiver's ToR port (port 0 of ToR 0 leads to host 0).
            Ptr<FabricQueue> bottleneck = fabric.topology->GetTor (0)->GetPort (0)->GetQueue ();
            bottleneck->TraceConnectWithoutContext (
                "Enqueue", MakeBoundCallback (&IncastTest::OnFrame, this, +1));
            bottleneck->TraceConnectWithoutContext (
                "Dequeue", MakeBoundCallback (&IncastTest::OnFrame, this, -1));
            Simulator::Schedule (burst,
                                 [this, &fabric] ()
                                 {
                                     for (const Ptr<FabricNetDevice>& port :
                                          fabric.topology->GetSwitchPorts ())
                                     {
                                         port->GetQueue ()->ResetStatistics ();
                                     }
                                     m_dataPeak = m_data;
                                 });
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (fabric.finish.size (), senders, "every flow finishes");
            uint32_t peak = 0;
            for (const Ptr<FabricNetDevice>& port : fabric.topology->GetSwitchPorts ())
            {
                peak = std::max (peak, port->GetQueue ()->GetPeakBytes ());
            }
            // The two round trips of the bound, from the topology (independent of pHost).
            const Time rttInter = fabric.topology->BaseRtt (kPhostHeaderBytes, kMss);
            const Time rttIntra = fabric.topology->IdealFct (0, 1, kMss, kPhostHeaderBytes, kMss) +
                                  fabric.topology->IdealFct (1, 0, 0, kPhostHeaderBytes, kMss);
            const Time delta = rttInter - rttIntra;
            NS_TEST_ASSERT_MSG_EQ (params.packetTime, NanoSeconds (300), "T at 40 Gbps");
            NS_TEST_ASSERT_MSG_EQ (delta, PicoSeconds (1991000), "Delta of this fabric");
            const auto bound = static_cast<uint32_t> (
                (delta.GetPicoSeconds () + params.packetTime.GetPicoSeconds () - 1) /
                    params.packetTime.GetPicoSeconds () +
                1);
            NS_TEST_ASSERT_MSG_EQ (bound, 8, "ceil(Delta / T) + 1");
            NS_TEST_ASSERT_MSG_LT_OR_EQ (
                m_dataPeak, bound, "data packets at the bottleneck within ceil(Delta / T) + 1");
            // The queue does build where near and far answers meet.  Measured: 7 data packets
            // (floor(Delta / T) + 1) for 7 senders, 8 for 15, whose waiting flows' RTS retries
            // (8 ns each) go first on the port and delay the data by a fraction of T.
            NS_TEST_ASSERT_MSG_GT_OR_EQ (m_dataPeak, bound - 1, "the overlap is reached");
            // Besides data, a port toward host 0 holds only RTS retries (40 B) of flows still
            // waiting for tokens (SRPT), at most one per sender (retries are a timeout
            // apart): every switch port within the data bound plus one RTS per sender, and
            // within the in-flight window (12 packets) plus those RTS.  (Measured: 7 senders
            // 10500 B, 15 senders 12400 B = 8 x 1500 + 10 RTS.)
            const uint32_t frameBytes = kMss + kPhostHeaderBytes + kFabricHeaderBytes;
            const uint32_t rtsBytes = kPhostHeaderBytes + kFabricHeaderBytes;
            NS_TEST_ASSERT_MSG_LT_OR_EQ (peak, bound * frameBytes + senders * rtsBytes,
                                         "every switch queue within the bound");
            NS_TEST_ASSERT_MSG_LT_OR_EQ (peak,
                                         params.inFlightWindow * frameBytes + senders * rtsBytes,
                                         "and within the in-flight window");
            // All packets through one 40 Gbps link take senders x 100 x T; losses in the
            // burst cost at most a few retransmission timeouts on top.
            Time last;
            for (const auto& [id, at] : fabric.finish)
            {
                last = std::max (last, at);
            }
            NS_TEST_ASSERT_MSG_LT (last,
                                   params.packetTime * static_cast<int64_t> (100 * senders) +
                                       4 * params.retransmissionTimeout,
                                   "the receiver's link stays busy");
        }
        Simulator::Destroy ();
    }

    static void OnFrame (IncastTest* test, int step, const FabricQueueItem& item, uint32_t)
    {
        if (item.header.payloadBytes > 0)
        {
            test->m_data = step > 0 ? test->m_data + 1 : test->m_data - 1;
            test->m_dataPeak = std::max (test->m_dataPeak, test->m_data);
        }
    }

    uint32_t m_racks;
    uint32_t m_data{0};     ///< data frames waiting at the bottleneck port
    uint32_t m_dataPeak{0}; ///< their maximum since the end of the burst
};

class PhostTestSuite : public TestSuite
{
  public:
    PhostTestSuite ()
          : TestSuite ("disaggsim-phost", UNIT)
    {
        AddTestCase (new LoneFlowTest (), TestCase::QUICK);
        AddTestCase (new TokenBeforeFreeTest (), TestCase::QUICK);
        AddTestCase (new GrantAfterFirstDataTest (), TestCase::QUICK);
        AddTestCase (new SrptGrantTest (), TestCase::QUICK);
        AddTestCase (new DowngradeTest (), TestCase::QUICK);
        AddTestCase (new LossRecoveryTest (), TestCase::QUICK);
        AddTestCase (new IncastTest (2), TestCase::QUICK);
        AddTestCase (new IncastTest (4), TestCase::QUICK);
    }
};

PhostTestSuite g_phostTestSuite;

} // namespace
