/*
 * disaggsim: Ideal (SRPT over one big switch) on hand-made cases with exact answers.
 */
#include "transports/ideal/helper/ideal-helper.h"
#include "transports/ideal/model/ideal-srpt.h"

#include "ns3/data-rate.h"
#include "ns3/simulator.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include <map>
#include <string>

using namespace ns3;

/// The scheduling rule on work units (1 unit = 1 ps), worked by hand.
class IdealSrptRuleTest : public TestCase
{
  public:
    IdealSrptRuleTest ()
          : TestCase ("IdealSrptCompletions: greedy SRPT matching, preemption, parallel ports")
    {
    }

  private:
    void DoRun () override
    {
        // Two flows into one receiver, both at 0, work 3 and 5: the smaller runs first
        // (done at 3), the larger after it (3 + 5 = 8).
        std::vector<int64_t> c = IdealSrptCompletions ({{0, 0, 9, 5}, {0, 1, 9, 3}});
        NS_TEST_ASSERT_MSG_EQ (c[1], 3, "smaller first");
        NS_TEST_ASSERT_MSG_EQ (c[0], 8, "larger at the sum");

        // Preemption: 0 -> 1 of work 10 starts at 0; 0 -> 2 of work 2 arrives at 4 and
        // takes the source port (remaining 6 > 2): done at 6; the first resumes: 10 + 2 = 12.
        c = IdealSrptCompletions ({{0, 0, 1, 10}, {4, 0, 2, 2}});
        NS_TEST_ASSERT_MSG_EQ (c[1], 6, "short flow preempts");
        NS_TEST_ASSERT_MSG_EQ (c[0], 12, "long flow delayed by exactly the short one's work");

        // Disjoint ports run in parallel: both finish at their own work.
        c = IdealSrptCompletions ({{0, 0, 1, 7}, {0, 2, 3, 9}});
        NS_TEST_ASSERT_MSG_EQ (c[0], 7, "parallel");
        NS_TEST_ASSERT_MSG_EQ (c[1], 9, "parallel");

        // Greedy matching: f0 0->1 work 1, f1 0->2 work 2, f2 3->2 work 4, all at 0.
        // t=0: order f0, f1, f2: f0 runs; f1 blocked (src 0); f2 runs (3 and 2 free).
        // t=1: f0 done; remaining f1 2 < f2 3: f1 runs, f2 waits (dst 2).  f1 done at 3.
        // t=3: f2 resumes with 3 left: done at 6.
        c = IdealSrptCompletions ({{0, 0, 1, 1}, {0, 0, 2, 2}, {0, 3, 2, 4}});
        NS_TEST_ASSERT_MSG_EQ (c[0], 1, "f0");
        NS_TEST_ASSERT_MSG_EQ (c[1], 3, "f1");
        NS_TEST_ASSERT_MSG_EQ (c[2], 6, "f2");

        // Ties go to the earlier start, then the lower index.
        c = IdealSrptCompletions ({{0, 0, 5, 4}, {0, 1, 5, 4}});
        NS_TEST_ASSERT_MSG_EQ (c[0], 4, "tie: lower index first");
        NS_TEST_ASSERT_MSG_EQ (c[1], 8, "tie: then the other");
    }
};

/// Builds a 2-rack x 4-host Clos (2 spines, uplinks 4x the access rate) with the Ideal
/// transport on it and records FlowFinished times.  Hosts 0-3 are rack 0, hosts 4-7 rack 1.
struct IdealFabric
{
    Ptr<ClosTopology> topology;
    Ptr<IdealFlowTransport> ideal;
    std::map<uint64_t, Time> finish;

    explicit IdealFabric (const std::string& rate)
    {
        topology = CreateObject<ClosTopology> ();
        topology->SetAttribute ("Racks", UintegerValue (2));
        topology->SetAttribute ("HostsPerRack", UintegerValue (4));
        topology->SetAttribute ("Spines", UintegerValue (2));
        topology->SetAttribute ("AccessRate", DataRateValue (DataRate (rate)));
        ideal = CreateObject<IdealFlowTransport> ();
        ideal->ConfigureFabric (topology);
        topology->Build ();
        ideal->Install (topology);
        ideal->TraceConnectWithoutContext ("FlowFinished",
                                           MakeCallback (&IdealFabric::OnFinished, this));
    }

    void OnFinished (uint64_t id, Time at)
    {
        finish[id] = at;
    }
};

/// A lone flow through the Ideal transport, exact FCTs derived by hand at 40 and 100 Gbps.
class IdealLoneFlowTest : public TestCase
{
  public:
    explicit IdealLoneFlowTest (const std::string& rate)
          : TestCase ("Ideal lone flow, " + rate + ": hand-derived FCT, slowdown 1 +- 1e-6")
          , m_rate (rate)
    {
    }

  private:
    void DoRun () override
    {
        // Per packet: 1460 B payload + 22 B header + 18 B frame = 1500 B = 12000 bit; a
        // 4096 B page is 1500 + 1500 + (1176 + 40) B = 4216 B = 33728 bit; 100 kB is 68 full
        // packets + 720 B = 68 x 1500 + 760 B = 102760 B = 822080 bit.  Fixed latency: intra
        // rack 2 x 20 ns (4 m at 5 ns/m) + 240 ns (one ToR) = 280 ns; inter rack 2 x 20 +
        // 2 x 200 ns (40 m) + 3 x 240 ns = 1160 ns, plus the re-serialization of the largest
        // packet on the 4x faster uplink (1500 B: 300 - 75 = 225 ns at 40 Gbps, 120 - 30 = 90
        // ns at 100 Gbps; topologies/doc).
        //   40 Gbps:  1460 B: 300 ns;    4096 B: 843.2 ns;   100 kB: 20552 ns of serialization
        //   100 Gbps: 1460 B: 120 ns;    4096 B: 337.28 ns;  100 kB: 8220.8 ns
        struct Case
        {
            uint32_t dst;
            uint64_t bytes;
            int64_t fctPs40;
            int64_t fctPs100;
        };

        const Case cases[] = {
            {1, 1460, 300000 + 280000, 120000 + 280000},                         // 580 / 400 ns
            {4, 1460, 300000 + 1160000 + 225000, 120000 + 1160000 + 90000},      // 1685 / 1370
            {1, 4096, 843200 + 280000, 337280 + 280000},                         // 1123.2 / 617.28
            {4, 4096, 843200 + 1160000 + 225000, 337280 + 1160000 + 90000},      // 2228.2 / 1587.28
            {1, 100000, 20552000 + 280000, 8220800 + 280000},                    // 20832 / 8500.8
            {4, 100000, 20552000 + 1160000 + 225000, 8220800 + 1160000 + 90000}, // 21937 / 9470.8
        };
        for (const Case& c : cases)
        {
            IdealFabric fabric (m_rate);
            fabric.ideal->AddFlow (FlowSpec{0, 1000, 0, c.dst, c.bytes});
            Simulator::Run ();
            NS_TEST_ASSERT_MSG_EQ (fabric.finish.count (0), 1u, "flow finished");
            Time fct = fabric.finish[0] - NanoSeconds (1000);
            int64_t expected = m_rate == "40Gbps" ? c.fctPs40 : c.fctPs100;
            NS_TEST_ASSERT_MSG_EQ (fct.GetPicoSeconds (), expected,
                                   "0 -> " << c.dst << ", " << c.bytes << " B at " << m_rate);
            Time ideal = fabric.topology->IdealFct (0, c.dst, c.bytes, 22, 1460);
            NS_TEST_ASSERT_MSG_EQ_TOL (double (fct.GetPicoSeconds ()) /
                                           double (ideal.GetPicoSeconds ()),
                                       1.0, 1e-6, "slowdown");
            Simulator::Destroy ();
        }
    }

    std::string m_rate;
};

/// A multi-flow SRPT schedule through the real Ideal transport on the Clos model, every
/// finish time derived by hand.
class IdealScheduleTest : public TestCase
{
  public:
    IdealScheduleTest ()
          : TestCase ("Ideal transport, 100 Gbps: 5 flows, one receiver, staggered starts, "
                      "preemption, parallel ports: exact finish times")
    {
    }

  private:
    void DoRun () override
    {
        // The Ideal of pFabric SIGCOMM'13 §5 (transports/ideal/doc/ideal.md): one big switch
        // with line-rate ports; at every arrival and completion the active flows are taken in
        // order of remaining work and each runs if its source and destination ports are free.
        // A flow's finish = its SRPT completion + its fixed path latency (IdealFct - work).
        //
        // Work at 100 Gbps: one 1460 B packet = 1500 B on the wire = 120 ns.  Path latency
        // of full packets: intra rack 2 x 20 + 240 = 280 ns; inter rack 2 x 20 + 2 x 200 +
        // 3 x 240 + (120 - 30) = 1250 ns (see IdealLoneFlowTest).
        //
        //   flow  hosts        rack   packets  work     start
        //   A     0 -> 5       inter  50       6000 ns  1000 ns
        //   B     1 -> 5       inter  10       1200 ns  2000 ns
        //   C     4 -> 5       intra  20       2400 ns  2500 ns
        //   D     0 -> 6       inter   5        600 ns  3000 ns
        //   E     3 -> 2       intra   3        360 ns  1000 ns
        //
        // t = 1000: A and E arrive; disjoint ports, both run.
        // t = 1360: E done (remaining 0).                       E completes 1360.
        // t = 2000: B arrives with 1200 < A's 6000 - 1000 = 5000: B takes port 5, A stops.
        // t = 2500: C arrives, 2400; order B (700), C, A: B runs, C and A wait for port 5.
        // t = 3000: D arrives, 600; order B (200), D, C, A: B (1 -> 5) and D (0 -> 6) run in
        //           parallel; C waits for port 5, A for ports 0 and 5.
        // t = 3200: B done.                                      B completes 3200.
        //           order D (400), C (2400), A (5000): D and C (4 -> 5) run; A still waits.
        // t = 3600: D done.                                      D completes 3600.
        //           C (2000) runs, A waits for port 5.
        // t = 5600: C done.                                      C completes 5600.
        // t = 5600: A resumes with 5000 left.                    A completes 10600.
        // Finish = completion + latency:
        //   A 10600 + 1250 = 11850 ns (FCT 10850, ideal 7250)
        //   B  3200 + 1250 =  4450 ns (FCT  2450 = ideal: slowdown 1)
        //   C  5600 +  280 =  5880 ns (FCT  3380, ideal 2680)
        //   D  3600 + 1250 =  4850 ns (FCT  1850 = ideal: slowdown 1)
        //   E  1360 +  280 =  1640 ns (FCT   640 = ideal: slowdown 1)
        IdealFabric fabric ("100Gbps");
        fabric.ideal->AddFlow (FlowSpec{0, 1000, 0, 5, 50 * 1460});
        fabric.ideal->AddFlow (FlowSpec{1, 2000, 1, 5, 10 * 1460});
        fabric.ideal->AddFlow (FlowSpec{2, 2500, 4, 5, 20 * 1460});
        fabric.ideal->AddFlow (FlowSpec{3, 3000, 0, 6, 5 * 1460});
        fabric.ideal->AddFlow (FlowSpec{4, 1000, 3, 2, 3 * 1460});
        Simulator::Run ();
        NS_TEST_ASSERT_MSG_EQ (fabric.finish.size (), 5u, "all finished");
        NS_TEST_ASSERT_MSG_EQ (fabric.finish[0], NanoSeconds (11850), "A: preempted, last");
        NS_TEST_ASSERT_MSG_EQ (fabric.finish[1], NanoSeconds (4450), "B: preempts A");
        NS_TEST_ASSERT_MSG_EQ (fabric.finish[2], NanoSeconds (5880), "C: waits for B and D");
        NS_TEST_ASSERT_MSG_EQ (fabric.finish[3], NanoSeconds (4850), "D: parallel with B");
        NS_TEST_ASSERT_MSG_EQ (fabric.finish[4], NanoSeconds (1640), "E: parallel with A");
        // The work the schedule is built on: 10 full packets at 100 Gbps =
        // 10 x 1500 B x 8 / 100 Gb/s = 1.2 us.
        NS_TEST_ASSERT_MSG_EQ (fabric.ideal->GetWork (10 * 1460), NanoSeconds (1200), "work");
        Simulator::Destroy ();
    }
};

class IdealTestSuite : public TestSuite
{
  public:
    IdealTestSuite ()
          : TestSuite ("disaggsim-ideal", UNIT)
    {
        AddTestCase (new IdealSrptRuleTest, TestCase::QUICK);
        AddTestCase (new IdealLoneFlowTest ("40Gbps"), TestCase::QUICK);
        AddTestCase (new IdealLoneFlowTest ("100Gbps"), TestCase::QUICK);
        AddTestCase (new IdealScheduleTest, TestCase::QUICK);
    }
};

static IdealTestSuite g_idealTestSuite;
