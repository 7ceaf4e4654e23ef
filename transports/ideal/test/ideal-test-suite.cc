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

/// End to end on the Clos model: FCT = SRPT completion - start + (IdealFct - work).
class IdealTransportTest : public TestCase
{
  public:
    IdealTransportTest ()
          : TestCase ("Ideal transport: lone flow at its ideal FCT, two flows to one receiver")
    {
    }

  private:
    std::map<uint64_t, Time> m_finish;

    void OnFinished (uint64_t id, Time at)
    {
        m_finish[id] = at;
    }

    void DoRun () override
    {
        Ptr<ClosTopology> topology = CreateObject<ClosTopology> ();
        topology->SetAttribute ("Racks", UintegerValue (2));
        topology->SetAttribute ("HostsPerRack", UintegerValue (4));
        topology->SetAttribute ("Spines", UintegerValue (2));
        topology->SetAttribute ("AccessRate", DataRateValue (DataRate ("100Gbps")));
        Ptr<IdealFlowTransport> ideal = CreateObject<IdealFlowTransport> ();
        ideal->ConfigureFabric (topology);
        topology->Build ();
        ideal->Install (topology);
        ideal->TraceConnectWithoutContext ("FlowFinished",
                                           MakeCallback (&IdealTransportTest::OnFinished, this));
        auto fct = [&] (uint32_t s, uint32_t d, uint64_t b)
        { return topology->IdealFct (s, d, b, 22, 1460); };
        // Flow 0 alone on 0 -> 5 (inter-rack), 100 kB, from 2 us: FCT = IdealFct exactly.
        ideal->AddFlow (FlowSpec{0, 2000, 0, 5, 100000});
        // Flows 1 (30 packets) and 2 (10 packets) from hosts 1 and 2 into host 3, both at
        // 50 us: flow 2 finishes at its ideal FCT; flow 1 waits for flow 2's work:
        // FCT_1 = work_2 + IdealFct_1.
        ideal->AddFlow (FlowSpec{1, 50000, 1, 3, 30 * 1460});
        ideal->AddFlow (FlowSpec{2, 50000, 2, 3, 10 * 1460});
        Simulator::Run ();
        NS_TEST_ASSERT_MSG_EQ (m_finish.size (), 3u, "all finished");
        NS_TEST_ASSERT_MSG_EQ (m_finish[0] - NanoSeconds (2000), fct (0, 5, 100000), "lone");
        Time start = NanoSeconds (50000);
        NS_TEST_ASSERT_MSG_EQ (m_finish[2] - start, fct (2, 3, 10 * 1460), "smaller at ideal");
        NS_TEST_ASSERT_MSG_EQ (m_finish[1] - start,
                               ideal->GetWork (10 * 1460) + fct (1, 3, 30 * 1460),
                               "larger waits exactly the smaller one's work");
        // work of 10 full packets at 100 Gbps: 10 x 1500 B x 8 / 100 Gb/s = 1.2 us
        NS_TEST_ASSERT_MSG_EQ (ideal->GetWork (10 * 1460), NanoSeconds (1200), "work");
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
        AddTestCase (new IdealTransportTest, TestCase::QUICK);
    }
};

static IdealTestSuite g_idealTestSuite;
