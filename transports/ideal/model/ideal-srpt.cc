/*
 * disaggsim: the Ideal reference: flow-level SRPT over one big switch.
 */
#include "ideal-srpt.h"

#include "ns3/abort.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace ns3
{

std::vector<int64_t>
IdealSrptCompletions (const std::vector<IdealSrptFlow>& flows)
{
    const std::size_t n = flows.size ();
    std::vector<int64_t> completion (n, -1);
    std::vector<int64_t> remaining (n);
    uint32_t nPorts = 0;
    for (std::size_t i = 0; i < n; ++i)
    {
        NS_ABORT_MSG_IF (flows[i].workPs <= 0, "IdealSrpt: flow " << i << " has no work");
        NS_ABORT_MSG_IF (flows[i].srcPort == flows[i].dstPort,
                         "IdealSrpt: flow " << i << " has src == dst");
        remaining[i] = flows[i].workPs;
        nPorts = std::max ({nPorts, flows[i].srcPort + 1, flows[i].dstPort + 1});
    }
    std::vector<std::size_t> byStart (n);
    std::iota (byStart.begin (), byStart.end (), 0);
    std::stable_sort (byStart.begin (), byStart.end (),
                      [&] (std::size_t a, std::size_t b)
                      { return flows[a].startPs < flows[b].startPs; });

    std::vector<std::size_t> active;  // flows started, not finished
    std::vector<std::size_t> running; // the current schedule
    std::vector<char> srcBusy (nPorts, 0);
    std::vector<char> dstBusy (nPorts, 0);
    std::size_t next = 0;
    int64_t now = n ? flows[byStart[0]].startPs : 0;
    const int64_t never = std::numeric_limits<int64_t>::max ();

    while (next < n || !active.empty ())
    {
        // Arrivals at `now`.
        while (next < n && flows[byStart[next]].startPs <= now)
        {
            active.push_back (byStart[next]);
            ++next;
        }
        // Greedy SRPT matching.
        std::sort (active.begin (), active.end (),
                   [&] (std::size_t a, std::size_t b)
                   {
                       if (remaining[a] != remaining[b])
                       {
                           return remaining[a] < remaining[b];
                       }
                       if (flows[a].startPs != flows[b].startPs)
                       {
                           return flows[a].startPs < flows[b].startPs;
                       }
                       return a < b;
                   });
        running.clear ();
        std::fill (srcBusy.begin (), srcBusy.end (), 0);
        std::fill (dstBusy.begin (), dstBusy.end (), 0);
        int64_t firstDone = never;
        for (std::size_t f : active)
        {
            if (!srcBusy[flows[f].srcPort] && !dstBusy[flows[f].dstPort])
            {
                srcBusy[flows[f].srcPort] = 1;
                dstBusy[flows[f].dstPort] = 1;
                running.push_back (f);
                firstDone = std::min (firstDone, now + remaining[f]);
            }
        }
        int64_t nextArrival = next < n ? flows[byStart[next]].startPs : never;
        int64_t t = std::min (firstDone, nextArrival);
        NS_ABORT_MSG_IF (t == never, "IdealSrpt: no progress");
        for (std::size_t f : running)
        {
            remaining[f] -= t - now;
            if (remaining[f] == 0)
            {
                completion[f] = t;
            }
        }
        now = t;
        active.erase (std::remove_if (active.begin (), active.end (),
                                      [&] (std::size_t f) { return remaining[f] == 0; }),
                      active.end ());
    }
    return completion;
}

} // namespace ns3
